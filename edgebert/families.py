"""What is architecture-specific, in one place per model family.

Everything else in edgebert asks this module for a family's layers, the parts of a layer by role, input names,
pooling default and transformers classes; no other module spells a module name or a weight-name pattern (the
TF.js and TFLite graphs are captured from the PyTorch module itself, `edgebert.targets.torch_graph`). A new family
is one `Family` here (and its tests), not an edit of the steps or the exporters: docs/architecture.md.

Roles inside one transformer layer (`LAYER_ROLES`): "attention" is the self-attention module (it holds the head
count and head size, which pruning and the importance gates read); the others are the Linear / LayerNorm modules of a post-LN layer, which is
what copying a layer from one family into another maps by (`WEIGHT_ROLES`). DistilBERT fits them as
attention.q_lin / k_lin / v_lin / out_lin, sa_layer_norm, ffn.lin1 / lin2, output_layer_norm; RoBERTa and ELECTRA
are BERT's layout under their own base-model attribute (ELECTRA's `embeddings_project` is the "projection"
embedding role when embedding_size != hidden_size).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from edgebert.errors import UserError

LAYER_ROLES = ("attention", "query", "key", "value", "attention_output", "attention_norm", "ffn_input", "ffn_output", "output_norm")
WEIGHT_ROLES = LAYER_ROLES[1:]
EMBEDDING_ROLES = ("word", "position", "token_type", "norm", "projection")


def get_path(root: Any, dotted: str) -> Any:
    """`root.a.b.0.c` for "a.b.0.c" ("" is `root`); digits index into lists (ALBERT's `albert_layers.0`).

    The one dotted-path walker."""
    for name in filter(None, dotted.split(".")):
        root = root[int(name)] if name.isdigit() else getattr(root, name)
    return root


def find_path(root: Any, dotted: str) -> Any | None:
    """`get_path` for an optional module: None when the last step of `dotted` is absent or None (DeBERTa's
    `pos_key_proj` when the layer shares its query/key projections)."""
    parent, _, last = dotted.rpartition(".")
    return getattr(get_path(root, parent), last, None)


def set_path(root: Any, dotted: str, value: Any) -> None:
    """Replace the object at `dotted` below `root` (see `get_path`)."""
    parent, _, last = dotted.rpartition(".")
    holder = get_path(root, parent)
    if last.isdigit():
        holder[int(last)] = value
    else:
        setattr(holder, last, value)


def _lookup(table: tuple[tuple[str, str], ...], role: str, what: str) -> str:
    paths = dict(table)
    if role not in paths:
        raise KeyError(f"no {what} role {role!r}; roles: {', '.join(paths)}")
    return paths[role]


@dataclass(frozen=True)
class Family:
    """Facts about one transformers model family that edgebert's steps rely on (plain data plus small accessors)."""

    name: str
    model_types: tuple[str, ...]
    uses_token_type_ids: bool
    default_pooling: str = "mean"
    # Dotted path from the base model to its list of transformer layers, and inside each entry of that list the
    # path to the transformer layer itself (ALBERT nests one layer per group).
    layers_path: str = "encoder.layer"
    layer_inner_path: str = ""
    # Module paths of each layer's parts by role (`LAYER_ROLES`), inside one layer (family.layers(...)[i]).
    layer_modules: tuple[tuple[str, str], ...] = (
        ("attention", "attention.self"),
        ("query", "attention.self.query"),
        ("key", "attention.self.key"),
        ("value", "attention.self.value"),
        ("attention_output", "attention.output.dense"),
        ("attention_norm", "attention.output.LayerNorm"),
        ("ffn_input", "intermediate.dense"),
        ("ffn_output", "output.dense"),
        ("output_norm", "output.LayerNorm"),
    )
    # Module paths (within the base model) of the embedding parts by role (`EMBEDDING_ROLES`); "projection"
    # (the embedding_size -> hidden_size Linear) only in factorised families.
    embedding_modules: tuple[tuple[str, str], ...] = (
        ("word", "embeddings.word_embeddings"),
        ("position", "embeddings.position_embeddings"),
        ("token_type", "embeddings.token_type_embeddings"),
        ("norm", "embeddings.LayerNorm"),
    )
    # Modules of the base model that a checkpoint may lack (a student trains no pooler): missing-weight checks skip them.
    optional_modules: tuple[str, ...] = ("pooler",)
    # The masked-LM class, for distillation, and its attribute holding the base model (the head: `mlm_head_modules`).
    mlm_class: str | None = None
    # Whether that class's head predicts masked tokens (XLNet's predicts permuted ones: its class only carries the
    # encoder for task and hidden-state distillation).
    masked_lm: bool = True
    mlm_base_attr: str = "bert"
    # Head parameters fitted when a teacher has no MLM head (the tied decoder weight stays frozen).
    mlm_head_fit_prefixes: tuple[str, ...] = ("cls.predictions.transform.", "cls.predictions.bias")
    # Parameter names (within the masked-LM model) of the MLM head's output bias and tied decoder weight.
    mlm_bias_key: str = "cls.predictions.bias"
    mlm_decoder_key: str = "cls.predictions.decoder.weight"
    # State-dict keys (within the masked-LM model) of the MLM head's tensors indexed by vocabulary id (the decoder
    # weight is tied to the word embeddings): vocabulary trimming (edgebert/compress/vocab.py) slices them with the
    # word table (`word_embeddings_key`). Keys a transformers version does not have are skipped.
    mlm_vocab_keys: tuple[str, ...] = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias", "cls.predictions.bias")
    # Config fields for the student's shape: (layers, hidden, heads, ffn).
    size_fields: tuple[str, str, str, str] = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
    # Config fields holding one entry per layer (ModernBERT's `layer_types`: global or sliding-window attention): a
    # student takes the entries of the teacher layers it copies, so each copied layer attends as it did.
    per_layer_fields: tuple[str, ...] = ()
    # Whether the FFN input Linear's rows are two halves of the FFN width, the input and its gate (ModernBERT's GeGLU
    # `Wi`, chunked in two): pruning a neuron cuts its row in both halves.
    ffn_gated: bool = False
    # Config field naming the FFN activation ("gelu", ...).
    activation_field: str = "hidden_act"
    # State-dict prefix (within the base model) of the embeddings, and of the word-embedding table.
    embeddings_prefix: str = "embeddings."
    word_embeddings_key: str = "embeddings.word_embeddings.weight"
    # Config field of a factorised (ALBERT-style) embedding width, for families that have one.
    embedding_size_field: str | None = None
    # Whether a factorised-embedding (ALBERT) student can be built from this family's embeddings exactly:
    # absolute positions from 0 and token-type tables (edgebert/distill/factorize.py).
    embedding_factorizable: bool = False
    # Attributes of the "attention" module holding its current head count (after pruning) and its head size; "" for
    # the count when the module keeps none (ModernBERT: its fused q/k/v Linear has 3 x heads x head size rows).
    heads_attr: str = "num_attention_heads"
    head_size_attr: str = "attention_head_size"
    # Path, inside the "attention" module, of one Linear computing query, key and value (thirds of its rows), if any.
    fused_qkv: str = ""
    # Cross-layer sharing (ALBERT): config fields of the number of distinct layer groups and of layers per group.
    # Without them every pass through the encoder has its own layer.
    layer_groups_field: str | None = None
    inner_layers_field: str | None = None
    # Modules of the masked-LM class applied in order to the last hidden state to give vocabulary logits, and the
    # state-dict prefixes of the head's parameters (all of them, including a tied decoder).
    mlm_head_modules: tuple[str, ...] = ("cls",)
    # The MLM head's dense transform and its LayerNorm (module paths within the masked-LM model), which a re-layout
    # into another family maps by role (edgebert/relayout.py); the output bias is `mlm_bias_key`.
    mlm_head_parts: tuple[tuple[str, str], ...] = (("transform", "cls.predictions.transform.dense"), ("transform_norm", "cls.predictions.transform.LayerNorm"))
    # Position ids start at pad_token_id + 1 (RoBERTa) instead of 0: the position table has pad id + 1 extra rows.
    positions_from_pad: bool = False
    # Head pruning (edgebert.pruned_heads) cuts a head's rows of the query / key / value Linears and its columns of
    # the attention output, and besides:
    # per-layer Linears besides query / key / value whose output rows are head after head (DeBERTa's own position
    # projections when share_att_key is off): cut with the heads; a layer without one (share_att_key on) skips it.
    head_projections: tuple[str, ...] = ()
    # Modules of the base model with one column per head that every layer reads (MPNet's relative-position bias
    # table): cut with the heads, so every layer must lose the same heads (`heads_tied`).
    head_tables: tuple[str, ...] = ()
    # Parameters of the "attention" module with one slice a head, and the axis of their heads (XLNet's einsum
    # projections and biases): cut there instead of in Linear modules.
    head_parameters: tuple[tuple[str, int], ...] = ()
    # Method of the "attention" module whose second argument is the per-head context [length, batch, heads, head size]
    # (XLNet's `post_attention`): importance gates go there when no Linear reads the context.
    head_context_method: str = ""
    # Whether torch.export keeps the sequence length free in this family's graph (the dynamic-shape ExecuTorch
    # program); XLNet's relative shift reshapes by 2 x length - 1, which the exporter cannot prove divisible.
    dynamic_sequence: bool = True
    # The verbs verified on this family (tests/test_families_export.py and the families' own tests); the others refuse
    # a model of this family with one line (`require`) rather than run untested code on it.
    verbs: tuple[str, ...] = ("distill", "compress", "trim", "export", "bench")

    def require(self, verb: str) -> None:
        """UserError (one line) when `verb` is not verified on this family."""
        if verb not in self.verbs:
            able = [f.name for f in FAMILIES if verb in f.verbs]
            raise UserError(
                f"{verb} does not support {self.name} models yet ({', '.join(self.verbs)} do); {verb} supports: {', '.join(able)}"
            )

    # ------------------------------------------------------------------------------------------- PyTorch modules
    def layer_module(self, role: str) -> str:
        """Module path of `role` (see `LAYER_ROLES`) inside one layer."""
        return _lookup(self.layer_modules, role, "layer")

    def layers(self, base_model: Any) -> list[Any]:
        """The transformer layers of a base (headless) model, in order."""
        return [get_path(entry, self.layer_inner_path) for entry in get_path(base_model, self.layers_path)]

    def module(self, layer: Any, role: str) -> Any:
        """The submodule `role` of one layer (an entry of `layers(...)`)."""
        return get_path(layer, self.layer_module(role))

    def replace_module(self, layer: Any, role: str, new: Any) -> None:
        """Put `new` where the submodule `role` of one layer is (e.g. a pruned Linear)."""
        set_path(layer, self.layer_module(role), new)

    def embedding_module(self, role: str) -> str | None:
        """Module path of embedding part `role` (see `EMBEDDING_ROLES`) within the base model, or None."""
        return dict(self.embedding_modules).get(role)

    def embedding(self, base_model: Any, role: str) -> Any:
        """The embedding part `role` of a base model, or None when the family has none."""
        path = self.embedding_module(role)
        return None if path is None else get_path(base_model, path)

    def embedding_parts(self, base_model: Any) -> dict[str, Any]:
        """Every embedding part of a base model by role (tables, LayerNorm, a factorised projection).

        ELECTRA builds `embeddings_project` only when embedding_size != hidden_size: an absent projection is left out."""
        parts = {}
        for role, path in self.embedding_modules:
            try:
                parts[role] = get_path(base_model, path)
            except AttributeError:
                if role != "projection":
                    raise
        return parts

    def mlm_head(self, model: Any) -> Any:
        """The masked-LM head of a masked-LM model as one module (hidden states -> vocabulary logits)."""
        from torch import nn

        parts = [getattr(model, name) for name in self.mlm_head_modules]
        return parts[0] if len(parts) == 1 else nn.Sequential(*parts)

    def mlm_head_part(self, model: Any, role: str) -> Any:
        """The MLM head's module `role` ("transform", "transform_norm") of a masked-LM model."""
        return get_path(model, _lookup(self.mlm_head_parts, role, "MLM head"))

    def position_offset(self, config: Any) -> int:
        """Position id of the first token: pad id + 1 for RoBERTa, else 0."""
        return int(config.pad_token_id) + 1 if self.positions_from_pad else 0

    def is_mlm_head_key(self, key: str) -> bool:
        """Whether a state-dict key of the masked-LM model belongs to its MLM head."""
        return key.split(".", 1)[0] in self.mlm_head_modules

    @property
    def heads_tied(self) -> bool:
        """Whether a head is removed from every layer at once (a `head_tables` column serves them all)."""
        return bool(self.head_tables)

    def heads(self, attention: Any) -> int:
        """Current head count of one layer's "attention" module."""
        if self.heads_attr:
            return int(getattr(attention, self.heads_attr))
        return int(get_path(attention, self.fused_qkv).out_features) // (3 * self.head_size(attention))

    def head_size(self, attention: Any) -> int:
        """Width of one head in one layer's "attention" module."""
        return int(getattr(attention, self.head_size_attr))

    # ------------------------------------------------------------------------------------------ layer sharing
    def distinct_layers(self, config: Any) -> int:
        """How many layer modules the encoder holds (`layers(...)` entries): fewer than passes when shared."""
        if self.layer_groups_field is None:
            return int(getattr(config, self.size_fields[0]))
        self.check_layout(config)
        return int(getattr(config, self.layer_groups_field))

    def pass_layers(self, config: Any) -> list[int]:
        """For each pass through the encoder (hidden_states[i + 1]), the index of the layer module it runs."""
        passes = int(getattr(config, self.size_fields[0]))
        groups = self.distinct_layers(config)
        return [int(i / (passes / groups)) for i in range(passes)]  # transformers' AlbertTransformer mapping

    def shares_layers(self, config: Any) -> bool:
        """Whether several passes run the same layer module (published ALBERT: one layer for all passes)."""
        return self.distinct_layers(config) < int(getattr(config, self.size_fields[0]))

    def check_layout(self, config: Any) -> None:
        """UserError unless each layer group holds one layer (edgebert walks `layer_inner_path`, the group's first)."""
        if self.inner_layers_field is not None and int(getattr(config, self.inner_layers_field, 1)) != 1:
            raise UserError(
                f"{self.name} models with {self.inner_layers_field} = {getattr(config, self.inner_layers_field)} are not "
                f"supported (edgebert handles one layer per group, {self.inner_layers_field} = 1, as published)"
            )

    def mlm_layers_prefix(self) -> str:
        """State-dict prefix, within the masked-LM model, of the layer list (`bert.encoder.layer`): keys continue `.<i>.`."""
        return f"{self.mlm_base_attr}.{self.layers_path}"

    def required_missing(self, keys: Iterable[str]) -> list[str]:
        """The missing weight names that matter: all but those of `optional_modules` (the pooler)."""
        return [k for k in keys if not set(k.split(".")) & set(self.optional_modules)]

    def layer_weight_patterns(self, role: str = "ffn_output") -> tuple[str, ...]:
        """fnmatch patterns of the state-dict keys of every layer's `role` weight (one per layer-index width: fnmatch's
        "*" would also cross into `attention.output.dense`), below any prefix (`encoder.`, `model.bert.`)."""
        inner = f"{self.layer_inner_path}." if self.layer_inner_path else ""
        path = f"{inner}{self.layer_module(role)}.weight"
        return tuple(f"*{self.layers_path}.{digits}.{path}" for digits in ("[0-9]", "[0-9][0-9]"))

    def encoder_inputs(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> dict[str, Any]:
        """Keyword arguments for the base model's forward (DistilBERT's takes no token_type_ids)."""
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.uses_token_type_ids:
            inputs["token_type_ids"] = token_type_ids
        return inputs

    def input_names(self) -> list[str]:
        """The graph inputs an exported model takes, in order."""
        names = ["input_ids", "attention_mask"]
        if self.uses_token_type_ids:
            names.append("token_type_ids")
        return names


BERT = Family(
    name="bert",
    model_types=("bert",),
    uses_token_type_ids=True,
    mlm_class="BertForMaskedLM",
    embedding_factorizable=True,
)

# ALBERT: factorised embeddings (vocab x embedding_size, then a Linear to hidden_size); layer group g holds one
# post-LN BERT layer under other names (albert_layer_groups[g].albert_layers[0]; inner_group_num 1). As published,
# num_hidden_groups is 1: the one layer runs num_hidden_layers times (`pass_layers`); edgebert's own factorised
# students have num_hidden_groups == num_hidden_layers (no sharing) unless `distill --layer-groups` asks for fewer
# (see edgebert/distill/factorize.py).
ALBERT = Family(
    name="albert",
    model_types=("albert",),
    uses_token_type_ids=True,
    layers_path="encoder.albert_layer_groups",
    layer_inner_path="albert_layers.0",
    layer_modules=(
        ("attention", "attention"),
        ("query", "attention.query"),
        ("key", "attention.key"),
        ("value", "attention.value"),
        ("attention_output", "attention.dense"),
        ("attention_norm", "attention.LayerNorm"),
        ("ffn_input", "ffn"),
        ("ffn_output", "ffn_output"),
        ("output_norm", "full_layer_layer_norm"),
    ),
    embedding_modules=(
        ("word", "embeddings.word_embeddings"),
        ("position", "embeddings.position_embeddings"),
        ("token_type", "embeddings.token_type_embeddings"),
        ("norm", "embeddings.LayerNorm"),
        ("projection", "encoder.embedding_hidden_mapping_in"),
    ),
    mlm_class="AlbertForMaskedLM",
    mlm_base_attr="albert",
    mlm_head_modules=("predictions",),
    mlm_head_parts=(("transform", "predictions.dense"), ("transform_norm", "predictions.LayerNorm")),
    layer_groups_field="num_hidden_groups",
    inner_layers_field="inner_group_num",
    mlm_head_fit_prefixes=("predictions.dense.", "predictions.LayerNorm.", "predictions.bias"),
    mlm_bias_key="predictions.bias",
    mlm_decoder_key="predictions.decoder.weight",
    mlm_vocab_keys=("predictions.decoder.weight", "predictions.decoder.bias", "predictions.bias"),
    embedding_size_field="embedding_size",
)

# The masked-LM head RoBERTa and MPNet share: `lm_head` (dense, layer_norm, decoder tied to the word table, bias).
_LM_HEAD: dict[str, Any] = dict(
    mlm_head_modules=("lm_head",),
    mlm_head_parts=(("transform", "lm_head.dense"), ("transform_norm", "lm_head.layer_norm")),
    mlm_head_fit_prefixes=("lm_head.dense.", "lm_head.layer_norm.", "lm_head.bias"),
    mlm_bias_key="lm_head.bias",
    mlm_decoder_key="lm_head.decoder.weight",
    mlm_vocab_keys=("lm_head.decoder.weight", "lm_head.decoder.bias", "lm_head.bias"),
)

# BERT's layout under the base-model attribute `roberta`; no token types (RoBERTa tokenizers give none), positions
# counted from padding_idx + 1 inside the model (traced with it).
ROBERTA = Family(
    name="roberta",
    model_types=("roberta",),
    uses_token_type_ids=False,
    mlm_class="RobertaForMaskedLM",
    mlm_base_attr="roberta",
    positions_from_pad=True,
    **_LM_HEAD,
)

# XLM-RoBERTa (multilingual; paraphrase-multilingual-* embedders are BERT bodies with its vocabulary): RoBERTa's
# layout and classes under their own names, a 250k-piece SentencePiece Unigram vocabulary (trim's main target).
XLM_ROBERTA = replace(ROBERTA, name="xlm-roberta", model_types=("xlm-roberta",), mlm_class="XLMRobertaForMaskedLM")

# BERT's layout under `electra`; when embedding_size != hidden_size the embeddings pass through `embeddings_project`.
ELECTRA = Family(
    name="electra",
    model_types=("electra",),
    uses_token_type_ids=True,
    embedding_modules=(*BERT.embedding_modules, ("projection", "embeddings_project")),
    embedding_size_field="embedding_size",
    # The generator's MLM head (hidden -> embedding_size -> vocabulary, decoder tied to the word table); a
    # discriminator checkpoint has none, so distillation fits one (`mlm_head_fit_prefixes`).
    mlm_class="ElectraForMaskedLM",
    mlm_base_attr="electra",
    mlm_head_modules=("generator_predictions", "generator_lm_head"),
    mlm_head_parts=(("transform", "generator_predictions.dense"), ("transform_norm", "generator_predictions.LayerNorm")),
    mlm_head_fit_prefixes=("generator_predictions.", "generator_lm_head.bias"),
    mlm_bias_key="generator_lm_head.bias",
    mlm_decoder_key="generator_lm_head.weight",
    mlm_vocab_keys=("generator_lm_head.weight", "generator_lm_head.bias"),
    embedding_factorizable=True,  # when embedding_size == hidden_size (no projection yet); see distill/student.py
)

DISTILBERT = Family(
    name="distilbert",
    model_types=("distilbert",),
    uses_token_type_ids=False,
    layers_path="transformer.layer",
    layer_modules=(
        ("attention", "attention"),
        ("query", "attention.q_lin"),
        ("key", "attention.k_lin"),
        ("value", "attention.v_lin"),
        ("attention_output", "attention.out_lin"),
        ("attention_norm", "sa_layer_norm"),
        ("ffn_input", "ffn.lin1"),
        ("ffn_output", "ffn.lin2"),
        ("output_norm", "output_layer_norm"),
    ),
    embedding_modules=(
        ("word", "embeddings.word_embeddings"),
        ("position", "embeddings.position_embeddings"),
        ("norm", "embeddings.LayerNorm"),
    ),
    # DistilBertForMaskedLM's head is four modules: vocab_transform, the activation, vocab_layer_norm, and
    # vocab_projector (tied to the word table).
    mlm_class="DistilBertForMaskedLM",
    mlm_base_attr="distilbert",
    mlm_head_modules=("vocab_transform", "activation", "vocab_layer_norm", "vocab_projector"),
    mlm_head_parts=(("transform", "vocab_transform"), ("transform_norm", "vocab_layer_norm")),
    mlm_head_fit_prefixes=("vocab_transform.", "vocab_layer_norm.", "vocab_projector.bias"),
    mlm_bias_key="vocab_projector.bias",
    mlm_decoder_key="vocab_projector.weight",
    mlm_vocab_keys=("vocab_projector.weight", "vocab_projector.bias"),
    size_fields=("n_layers", "dim", "n_heads", "hidden_dim"),
    activation_field="activation",
    heads_attr="n_heads",
)

# MPNet (all-mpnet-base-v2, multi-qa-mpnet): BERT's post-LN layer with q/k/v/o under `attention.attn`, no token
# types, positions from padding_idx + 1 (as RoBERTa), and one relative-position bias table (`relative_attention_bias`,
# 32 buckets x heads) that every layer adds to its attention scores: the graph computes it from the sequence length,
# and head pruning cuts the same heads in every layer, with their columns of that table (`head_tables`).
MPNET = Family(
    name="mpnet",
    model_types=("mpnet",),
    uses_token_type_ids=False,
    layer_modules=(
        ("attention", "attention.attn"),
        ("query", "attention.attn.q"),
        ("key", "attention.attn.k"),
        ("value", "attention.attn.v"),
        ("attention_output", "attention.attn.o"),
        ("attention_norm", "attention.LayerNorm"),
        ("ffn_input", "intermediate.dense"),
        ("ffn_output", "output.dense"),
        ("output_norm", "output.LayerNorm"),
    ),
    embedding_modules=(
        ("word", "embeddings.word_embeddings"),
        ("position", "embeddings.position_embeddings"),
        ("norm", "embeddings.LayerNorm"),
    ),
    mlm_class="MPNetForMaskedLM",
    mlm_base_attr="mpnet",
    positions_from_pad=True,
    **_LM_HEAD,
    head_tables=("encoder.relative_attention_bias",),
    verbs=("export", "bench", "distill", "compress", "trim"),
)

# ModernBERT: pre-norm layers under `layers` (attn_norm before attention, Identity in layer 0; mlp_norm before the
# GeGLU MLP), fused q/k/v (`attn.Wqkv`: the query, key and value roles name the same module), rotary positions (no
# position table), alternating sliding-window and global attention, and a final norm. Its norm roles are the norms
# *before* attention and MLP, which is all export's quantization islands ask of them. Distillation copies whole layers
# (with their attention kind, `per_layer_fields`); the verbs that prune or re-lay layers by role assume post-LN
# layers and separate q/k/v, so they refuse it.
MODERNBERT = Family(
    name="modernbert",
    model_types=("modernbert",),
    uses_token_type_ids=False,
    layers_path="layers",
    layer_modules=(
        ("attention", "attn"),
        ("query", "attn.Wqkv"),
        ("key", "attn.Wqkv"),
        ("value", "attn.Wqkv"),
        ("attention_output", "attn.Wo"),
        ("attention_norm", "attn_norm"),
        ("ffn_input", "mlp.Wi"),
        ("ffn_output", "mlp.Wo"),
        ("output_norm", "mlp_norm"),
    ),
    embedding_modules=(("word", "embeddings.tok_embeddings"), ("norm", "embeddings.norm")),
    word_embeddings_key="embeddings.tok_embeddings.weight",
    optional_modules=(),
    mlm_class="ModernBertForMaskedLM",
    mlm_base_attr="model",
    mlm_head_modules=("head", "decoder"),
    mlm_head_parts=(("transform", "head.dense"), ("transform_norm", "head.norm")),
    mlm_head_fit_prefixes=("head.", "decoder.bias"),
    mlm_bias_key="decoder.bias",
    mlm_decoder_key="decoder.weight",
    mlm_vocab_keys=("decoder.weight", "decoder.bias"),
    per_layer_fields=("layer_types",),
    ffn_gated=True,
    heads_attr="",
    head_size_attr="head_dim",
    fused_qkv="Wqkv",
    verbs=("export", "bench", "distill", "compress", "trim"),
)

# DeBERTa-v2 / v3 (the strongest small classifiers): BERT's post-LN layer with query_proj / key_proj / value_proj,
# disentangled attention over relative positions (`encoder.rel_embeddings`, log buckets, shared by every layer), no
# absolute position or token-type table in v3 (position_biased_input false, type_vocab_size 0), a SentencePiece
# Unigram tokenizer. Export, bench, distill (whole layers copied; the shared relative-position table comes along),
# vocabulary trimming, FFN and head pruning: the shared relative embeddings go through each layer's own query and key
# projections (share_att_key) or its `pos_query_proj` / `pos_key_proj`, which lose the same rows as q / k / v.
DEBERTA_V2 = Family(
    name="deberta-v2",
    model_types=("deberta-v2",),
    uses_token_type_ids=False,
    layer_modules=(
        ("attention", "attention.self"),
        ("query", "attention.self.query_proj"),
        ("key", "attention.self.key_proj"),
        ("value", "attention.self.value_proj"),
        ("attention_output", "attention.output.dense"),
        ("attention_norm", "attention.output.LayerNorm"),
        ("ffn_input", "intermediate.dense"),
        ("ffn_output", "output.dense"),
        ("output_norm", "output.LayerNorm"),
    ),
    embedding_modules=(("word", "embeddings.word_embeddings"), ("norm", "embeddings.LayerNorm")),
    mlm_class="DebertaV2ForMaskedLM",
    mlm_base_attr="deberta",
    head_projections=("attention.self.pos_query_proj", "attention.self.pos_key_proj"),
    verbs=("export", "bench", "distill", "compress", "trim"),
)

# XLNet (the seed notes' fifth family): relative-position attention (sinusoidal relative encodings, content,
# position and segment biases r_w / r_r / r_s, relative segment encodings `seg_embed`) whose query, key, value, output
# and position projections are parameters of `rel_attn` (einsum products, not Linear modules: the four projection
# roles name `rel_attn`; head pruning slices those parameters, `head_parameters`), post-LN FFN under `ff`, no absolute
# position table, no embedding norm. Its tokenizer puts
# `<sep> <cls>` at the end and pads on the left; the classifier (SequenceSummary "last") reads the last token, so
# the static exports and edgebert-runtime pad on the left (`padding_side` in the manifest). Inference is the
# one-stream pass (no target mapping, no permutation mask): two-stream attention is pre-training only.
XLNET = Family(
    name="xlnet",
    model_types=("xlnet",),
    uses_token_type_ids=True,
    default_pooling="lasttoken",
    layers_path="layer",
    layer_modules=(
        ("attention", "rel_attn"),
        ("query", "rel_attn"),
        ("key", "rel_attn"),
        ("value", "rel_attn"),
        ("attention_output", "rel_attn"),
        ("attention_norm", "rel_attn.layer_norm"),
        ("ffn_input", "ff.layer_1"),
        ("ffn_output", "ff.layer_2"),
        ("output_norm", "ff.layer_norm"),
    ),
    embedding_modules=(("word", "word_embedding"),),
    embeddings_prefix="word_embedding.",
    word_embeddings_key="word_embedding.weight",
    optional_modules=(),
    size_fields=("n_layer", "d_model", "n_head", "d_inner"),
    activation_field="ff_activation",
    heads_attr="n_head",
    mlm_class="XLNetLMHeadModel",
    masked_lm=False,
    mlm_base_attr="transformer",
    mlm_head_modules=("lm_loss",),
    mlm_head_parts=(),
    mlm_head_fit_prefixes=("lm_loss.bias",),
    mlm_bias_key="lm_loss.bias",
    mlm_decoder_key="lm_loss.weight",
    mlm_vocab_keys=("lm_loss.weight", "lm_loss.bias"),
    head_size_attr="d_head",
    head_parameters=(("q", 1), ("k", 1), ("v", 1), ("o", 1), ("r", 1), ("r_r_bias", 0), ("r_s_bias", 0), ("r_w_bias", 0), ("seg_embed", 1)),
    head_context_method="post_attention",
    dynamic_sequence=False,
    verbs=("export", "bench", "distill", "compress", "trim"),
)

FAMILIES: tuple[Family, ...] = (BERT, ALBERT, ROBERTA, XLM_ROBERTA, ELECTRA, DISTILBERT, MPNET, MODERNBERT, DEBERTA_V2, XLNET)


def supported_model_types() -> list[str]:
    """Every `model_type` that edgebert can handle today."""
    return [t for f in FAMILIES for t in f.model_types]


def family_for(model_type: str) -> Family:
    """The family of a config's `model_type`, or a UserError naming the supported ones."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    raise UserError(
        f"model_type '{model_type}' is not supported yet; supported: {', '.join(supported_model_types())}"
    )


def family_named(name: str) -> Family:
    """The family called `name` (`Family.name`, as a subprocess spec or a manifest records it)."""
    for family in FAMILIES:
        if family.name == name:
            return family
    raise UserError(f"unknown model family '{name}'; known: {', '.join(f.name for f in FAMILIES)}")
