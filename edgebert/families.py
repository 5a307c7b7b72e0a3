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
    # with "/" separators. Quantization recipes keep it in float (see edgebert/compress/onnx_quantize.py).
    ffn_output_module: str = "output.dense"
    attention_output_module: str = "attention.output.dense"
    # Structured pruning (edgebert/compress/prune.py), module paths inside one layer:
    # the self-attention module whose first output is the per-head context [batch, seq, heads * head_dim]
    # (heads concatenated in order, before the output projection) ...
    attention_context_module: str = "attention.self"
    # ... and the FFN module whose output is the post-activation hidden [batch, seq, intermediate] together with
    # the FFN input (up) projection whose output rows are the neurons (the down projection is ffn_output_module).
    ffn_activation_module: str = "intermediate"
    ffn_input_module: str = "intermediate.dense"
    # The TensorFlow mirror (tf_model_class), whose layers ignore config.pruned_heads: attribute path from the TF
    # model to its layer list, and inside one layer the self-attention (query/key/value Dense layers) and its
    # output block (whose `dense` takes the concatenated heads). Used by `edgebert.compress.prune.tf_model_from_pt`.
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
    extra: dict[str, Any] = field(default_factory=dict)

    def layers(self, base_model: Any) -> Any:
        """The module list holding the transformer layers of a base (headless) model."""
        obj = base_model
        for name in self.layers_path:
            obj = getattr(obj, name)
        return obj

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

FAMILIES: tuple[Family, ...] = (BERT,)


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
