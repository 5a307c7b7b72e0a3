"""What is architecture-specific, in one place per model family.

Everything else in edgebert asks this module for a family's layers, the parts of a layer by role, input names,
pooling default and the classes that other runtimes use; no other module spells a module name or a weight-name
pattern. Adding RoBERTa, DistilBERT or ELECTRA means adding one `Family` here (and its tests), not editing the
steps or the exporters.

Roles inside one transformer layer (`LAYER_ROLES`): "attention" is the self-attention module (it holds the head
count and head size, which pruning and the importance gates read); the others are the Linear / LayerNorm modules of a post-LN layer, which is
what copying a layer from one family into another maps by (`WEIGHT_ROLES`). DistilBERT fits them as
attention.q_lin / k_lin / v_lin / out_lin, sa_layer_norm, ffn.lin1 / lin2, output_layer_norm; RoBERTa and ELECTRA
are BERT's layout under their own base-model attribute (ELECTRA's `embeddings_project` is the "projection"
embedding role when embedding_size != hidden_size).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from edgebert.errors import UserError

LAYER_ROLES = ("attention", "query", "key", "value", "attention_output", "attention_norm", "ffn_input", "ffn_output", "output_norm")
WEIGHT_ROLES = LAYER_ROLES[1:]
EMBEDDING_ROLES = ("word", "position", "token_type", "norm", "projection")
# Roles inside one layer of the TensorFlow mirror (`tf_model_class`) that edgebert reaches into: the self-attention
# (head count, head size), its query/key/value Dense layers, and the Dense layer that takes the concatenated heads.
TF_LAYER_ROLES = ("attention", "query", "key", "value", "attention_output")


def get_path(root: Any, dotted: str) -> Any:
    """`root.a.b.0.c` for "a.b.0.c" ("" is `root`); digits index into lists (ALBERT's `albert_layers.0`).

    The one dotted-path walker: it serves torch modules and TensorFlow layers alike."""
    for name in filter(None, dotted.split(".")):
        root = root[int(name)] if name.isdigit() else getattr(root, name)
    return root


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
    # The TensorFlow class that mirrors the PyTorch base model (TF.js / TFLite fallback paths); in it, the dotted
    # path from the TF model to its layer list and the `TF_LAYER_ROLES` inside one entry of that list. The TF layers
    # ignore config.pruned_heads (see `edgebert.targets.tf_savedmodel.load_tf_model`).
    tf_model_class: str | None = None
    tf_layers_path: str = "bert.encoder.layer"
    tf_layer_modules: tuple[tuple[str, str], ...] = (
        ("attention", "attention.self_attention"),
        ("query", "attention.self_attention.query"),
        ("key", "attention.self_attention.key"),
        ("value", "attention.self_attention.value"),
        ("attention_output", "attention.dense_output.dense"),
    )
    # tensorflowjs_converter fnmatch patterns of the FFN down-projection weights kept float16 under uint8
    # (graph weight names like `StatefulPartitionedCall/tf_bert_model/bert/encoder/layer_._5/output/dense/...`;
    # fnmatch's "*" crosses "/", hence one pattern per layer-index width for BERT).
    tfjs_ffn_output_patterns: tuple[str, ...] = ("*/layer_._[0-9]/output/dense/*", "*/layer_._[0-9][0-9]/output/dense/*")
    # The masked-LM class, for distillation; its attribute holding the base model, and the state-dict prefix of its
    # MLM head (whose decoder is tied to the word embeddings).
    mlm_class: str | None = None
    mlm_base_attr: str = "bert"
    mlm_head_prefix: str = "cls"
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
    # Config field naming the FFN activation ("gelu", ...).
    activation_field: str = "hidden_act"
    # State-dict prefix (within the base model) of the embeddings, and of the word-embedding table.
    embeddings_prefix: str = "embeddings."
    word_embeddings_key: str = "embeddings.word_embeddings.weight"
    # Config field of a factorised (ALBERT-style) embedding width, for families that have one.
    embedding_size_field: str | None = None
    # Whether edgebert.compress's head/FFN pruning understands this family's modules.
    prunable: bool = True
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
        """Every embedding part of a base model by role (tables, LayerNorm, a factorised projection)."""
        return {role: get_path(base_model, path) for role, path in self.embedding_modules}

    def mlm_layers_prefix(self) -> str:
        """State-dict prefix, within the masked-LM model, of the layer list (`bert.encoder.layer`): keys continue `.<i>.`."""
        return f"{self.mlm_base_attr}.{self.layers_path}"

    def required_missing(self, keys: Iterable[str]) -> list[str]:
        """The missing weight names that matter: all but those of `optional_modules` (the pooler)."""
        return [k for k in keys if not set(k.split(".")) & set(self.optional_modules)]

    # ---------------------------------------------------------------------------------------- TensorFlow mirror
    def tf_layers(self, tf_model: Any) -> list[Any]:
        """The entries of the TF mirror's layer list (the `TF_LAYER_ROLES` paths start from one of them)."""
        return list(get_path(tf_model, self.tf_layers_path))

    def tf_layer_module(self, role: str) -> str:
        """Path of `role` (see `TF_LAYER_ROLES`) inside one entry of `tf_layers(...)`."""
        return _lookup(self.tf_layer_modules, role, "TensorFlow layer")

    def tf_module(self, tf_layer: Any, role: str) -> Any:
        """The TF layer `role` inside one entry of `tf_layers(...)`."""
        return get_path(tf_layer, self.tf_layer_module(role))

    def replace_tf_module(self, tf_layer: Any, role: str, new: Any) -> None:
        """Put `new` where the TF layer `role` is (before the model's variables exist)."""
        set_path(tf_layer, self.tf_layer_module(role), new)

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
    tf_model_class="TFBertModel",
    mlm_class="BertForMaskedLM",
)

# ALBERT as edgebert builds it: factorised embeddings (vocab x embedding_size, then a Linear to hidden_size) and,
# with num_hidden_groups == num_hidden_layers and inner_group_num == 1, no layer sharing: every layer is a post-LN
# BERT layer under other names (see edgebert/distill/factorize.py). Layer i is albert_layer_groups[i].albert_layers[0].
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
    tf_model_class="TFAlbertModel",
    tf_layers_path="albert.encoder.albert_layer_groups",
    tf_layer_modules=(
        ("attention", "albert_layers.0.attention"),
        ("query", "albert_layers.0.attention.query"),
        ("key", "albert_layers.0.attention.key"),
        ("value", "albert_layers.0.attention.value"),
        ("attention_output", "albert_layers.0.attention.dense"),
    ),
    tfjs_ffn_output_patterns=("*/ffn_output/*",),
    mlm_class="AlbertForMaskedLM",
    mlm_base_attr="albert",
    mlm_head_prefix="predictions",
    mlm_head_fit_prefixes=("predictions.dense.", "predictions.LayerNorm.", "predictions.bias"),
    mlm_bias_key="predictions.bias",
    mlm_decoder_key="predictions.decoder.weight",
    mlm_vocab_keys=("predictions.decoder.weight", "predictions.decoder.bias", "predictions.bias"),
    embedding_size_field="embedding_size",
)

# BERT's layout under the base-model attribute `roberta`; no token types (RoBERTa tokenizers give none), positions
# counted from padding_idx + 1 inside the model (traced with it).
ROBERTA = Family(
    name="roberta",
    model_types=("roberta",),
    uses_token_type_ids=False,
    tf_model_class="TFRobertaModel",
    tf_layers_path="roberta.encoder.layer",
    mlm_class=None,
    verbs=("export", "bench"),
)

# BERT's layout under `electra`; when embedding_size != hidden_size the embeddings pass through `embeddings_project`.
ELECTRA = Family(
    name="electra",
    model_types=("electra",),
    uses_token_type_ids=True,
    embedding_modules=(*BERT.embedding_modules, ("projection", "embeddings_project")),
    embedding_size_field="embedding_size",
    tf_model_class="TFElectraModel",
    tf_layers_path="electra.encoder.layer",
    mlm_class=None,
    verbs=("export", "bench"),
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
    tf_model_class="TFDistilBertModel",
    tf_layers_path="distilbert.transformer.layer",
    tf_layer_modules=(
        ("attention", "attention"),
        ("query", "attention.q_lin"),
        ("key", "attention.k_lin"),
        ("value", "attention.v_lin"),
        ("attention_output", "attention.out_lin"),
    ),
    tfjs_ffn_output_patterns=("*/layer_._[0-9]/ffn/lin2/*", "*/layer_._[0-9][0-9]/ffn/lin2/*"),
    mlm_class=None,
    size_fields=("n_layers", "dim", "n_heads", "hidden_dim"),
    activation_field="activation",
    prunable=False,
    verbs=("export", "bench"),
)

FAMILIES: tuple[Family, ...] = (BERT, ALBERT, ROBERTA, ELECTRA, DISTILBERT)


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
