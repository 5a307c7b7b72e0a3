"""What is architecture-specific, in one place per model family.

Everything else in edgebert asks this module for a family's layer list, input names, pooling default
and the classes that other runtimes use; adding RoBERTa, ALBERT, DistilBERT or ELECTRA means adding one
`Family` here (and its tests), not editing the exporters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebert.errors import UserError


@dataclass(frozen=True)
class Family:
    """Facts about one transformers model family that edgebert's steps rely on."""

    name: str
    model_types: tuple[str, ...]
    uses_token_type_ids: bool
    default_pooling: str = "mean"
    # Attribute path from the base model to its list of transformer layers.
    layers_path: tuple[str, ...] = ("encoder", "layer")
    # The TensorFlow class that mirrors the PyTorch base model (TF.js / TFLite fallback paths).
    tf_model_class: str | None = None
    # The masked-LM class, for distillation.
    mlm_class: str | None = None
    # Module path, inside one layer, of the FFN output (down) projection; ONNX node names contain it
    # with "/" separators. Quantization recipes keep it in float (see edgebert/targets/onnx/quantize.py).
    ffn_output_module: str = "output.dense"
    attention_output_module: str = "attention.output.dense"
    # Structured pruning (edgebert/compress/prune.py): the self-attention module (inside one layer) that holds
    # `num_attention_heads` and `prune_heads`. Importance gates (edgebert/compress/importance.py) sit on the inputs
    # of attention_output_module (the concatenated heads) and ffn_output_module (the post-activation neurons);
    # ffn_input_module is the FFN up projection, whose output rows are the neurons.
    attention_context_module: str = "attention.self"
    ffn_input_module: str = "intermediate.dense"
    # The TensorFlow mirror (tf_model_class), whose layers ignore config.pruned_heads: attribute path from the TF
    # model to its layer list, and inside one layer the self-attention (query/key/value Dense layers) and its
    # output block (whose `dense` takes the concatenated heads). Used by `edgebert.targets.tf_savedmodel.load_tf_model`.
    tf_layers_path: tuple[str, ...] = ("bert", "encoder", "layer")
    tf_attention_context_module: str = "attention.self_attention"
    tf_attention_output_module: str = "attention.dense_output"
    # Distillation: attribute of the masked-LM class that holds the base model, and the state-dict prefix of its
    # MLM head (whose decoder is tied to the word embeddings).
    mlm_base_attr: str = "bert"
    mlm_head_prefix: str = "cls"
    # Head parameters fitted when a teacher has no MLM head (the tied decoder weight stays frozen).
    mlm_head_fit_prefixes: tuple[str, ...] = ("cls.predictions.transform.", "cls.predictions.bias")
    # Config fields for the student's shape: (layers, hidden, heads, ffn).
    size_fields: tuple[str, str, str, str] = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
    # State-dict prefix (within the base model) of the embeddings, and of the word-embedding table.
    embeddings_prefix: str = "embeddings."
    word_embeddings_key: str = "embeddings.word_embeddings.weight"
    # Path inside each entry of `layers_path` to the transformer layer itself (ALBERT nests one layer per group).
    layer_inner_path: tuple[str, ...] = ()
    # tensorflowjs_converter fnmatch patterns of the FFN down-projection weights kept float16 under uint8
    # (graph weight names like `StatefulPartitionedCall/tf_bert_model/bert/encoder/layer_._5/output/dense/...`;
    # fnmatch's "*" crosses "/", hence one pattern per layer-index width for BERT).
    tfjs_ffn_output_patterns: tuple[str, ...] = ("*/layer_._[0-9]/output/dense/*", "*/layer_._[0-9][0-9]/output/dense/*")
    # Config field of a factorised (ALBERT-style) embedding width, for families that have one.
    embedding_size_field: str | None = None
    # Whether edgebert.compress's head/FFN pruning understands this family's modules.
    prunable: bool = True
    # Module paths of each layer's parts by role, inside one layer (family.layers(...)[i]): what copying a layer
    # from one family into another maps by (edgebert/distill/factorize.py), with shape asserts.
    layer_modules: tuple[tuple[str, str], ...] = (
        ("query", "attention.self.query"),
        ("key", "attention.self.key"),
        ("value", "attention.self.value"),
        ("attention_output", "attention.output.dense"),
        ("attention_norm", "attention.output.LayerNorm"),
        ("ffn_input", "intermediate.dense"),
        ("ffn_output", "output.dense"),
        ("output_norm", "output.LayerNorm"),
    )
    # Module paths (within the base model) of the embedding parts by role; "projection" (ALBERT's
    # embedding_size -> hidden_size Linear) only in factorised families.
    embedding_modules: tuple[tuple[str, str], ...] = (
        ("word", "embeddings.word_embeddings"),
        ("position", "embeddings.position_embeddings"),
        ("token_type", "embeddings.token_type_embeddings"),
        ("norm", "embeddings.LayerNorm"),
    )
    # Parameter name (within the masked-LM model) of the MLM head's output bias.
    mlm_bias_key: str = "cls.predictions.bias"
    # State-dict keys (within the masked-LM model) of the MLM head's tensors indexed by vocabulary id (the decoder
    # weight is tied to the word embeddings): vocabulary trimming (edgebert/compress/vocab.py) slices them with the
    # word table (`word_embeddings_key`). Keys a transformers version does not have are skipped.
    mlm_vocab_keys: tuple[str, ...] = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias", "cls.predictions.bias")

    def layer_module(self, role: str) -> str:
        """Module path of `role` (see `layer_modules`) inside one layer."""
        return dict(self.layer_modules)[role]

    def embedding_module(self, role: str) -> str | None:
        """Module path of embedding part `role` (see `embedding_modules`) within the base model, or None."""
        return dict(self.embedding_modules).get(role)
    extra: dict[str, Any] = field(default_factory=dict)

    def layers(self, base_model: Any) -> Any:
        """The module list holding the transformer layers of a base (headless) model."""
        obj = base_model
        for name in self.layers_path:
            obj = getattr(obj, name)
        if not self.layer_inner_path:
            return obj
        layers = []
        for entry in obj:
            for name in self.layer_inner_path:
                entry = entry[int(name)] if name.isdigit() else getattr(entry, name)
            layers.append(entry)
        return layers

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
    layers_path=("encoder", "albert_layer_groups"),
    layer_inner_path=("albert_layers", "0"),
    tf_model_class="TFAlbertModel",
    mlm_class="AlbertForMaskedLM",
    ffn_output_module="ffn_output",
    attention_output_module="attention.dense",
    attention_context_module="attention",
    ffn_input_module="ffn",
    tf_layers_path=("albert", "encoder", "albert_layer_groups"),
    tf_attention_context_module="albert_layers.0.attention",
    tf_attention_output_module="albert_layers.0.attention",
    mlm_base_attr="albert",
    mlm_head_prefix="predictions",
    mlm_head_fit_prefixes=("predictions.dense.", "predictions.LayerNorm.", "predictions.bias"),
    tfjs_ffn_output_patterns=("*/ffn_output/*",),
    embedding_size_field="embedding_size",
    layer_modules=(
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
    mlm_bias_key="predictions.bias",
    mlm_vocab_keys=("predictions.decoder.weight", "predictions.decoder.bias", "predictions.bias"),
)

FAMILIES: tuple[Family, ...] = (BERT, ALBERT)


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
