"""A TensorFlow SavedModel of a model directory's sentence embedder, shared by the TF-based export paths.

Runs only in a TensorFlow subprocess (see `export_targets.tfjs_convert` and the TFLite fallback in
`export_targets.tflite`): transformers' TF class for the family is built from the PyTorch weights and wrapped
in a `tf.function` with int32 inputs of fixed shape [1, seq_len] that pools like
`edgebert.pooling.SentenceEmbedder` and L2-normalises.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SIGNATURE = "serving_default"


def _use_erf_gelu() -> str:
    """Make transformers' TF "gelu" the explicit erf formula instead of Keras' exact GELU (which uses Erfc).

    Both compute x * Phi(x) exactly; tfjs has an Erf kernel but no Erfc, so the converter rejects the Keras form.
    """
    from transformers import activations_tf

    activations_tf.ACT2FN["gelu"] = activations_tf._gelu
    return "erf"


def build_saved_model(
    model_dir: Path,
    seq_len: int,
    pooling: str,
    input_names: list[str],
    saved_dir: Path,
    erf_gelu: bool = True,
    tf_class_name: str | None = None,
) -> dict:
    """Write a SavedModel whose serving signature maps int32 [1, seq_len] inputs to the two named outputs."""
    import tensorflow as tf
    import transformers

    gelu = _use_erf_gelu() if erf_gelu else "keras"
    tf_class = getattr(transformers, tf_class_name or os.environ.get("EDGEBERT_TF_CLASS", "TFBertModel"))
    encoder = tf_class.from_pretrained(str(model_dir), from_pt=True)
    config = encoder.config
    if getattr(config, "hidden_act", "gelu") not in ("gelu", "gelu_new", "relu", "gelu_fast", "quick_gelu"):
        raise SystemExit(f"unsupported hidden_act {config.hidden_act!r} for the TF.js path")

    specs = [tf.TensorSpec([1, seq_len], tf.int32, name=name) for name in input_names]

    def pool(hidden: Any, mask: Any) -> Any:
        if pooling == "cls":
            return hidden[:, 0]
        m = tf.cast(mask, hidden.dtype)[:, :, None]
        if pooling == "mean":
            return tf.reduce_sum(hidden * m, axis=1) / tf.maximum(tf.reduce_sum(m, axis=1), 1e-9)
        if pooling == "max":
            return tf.reduce_max(hidden + (1.0 - m) * -1e9, axis=1)
        raise SystemExit(f"unknown pooling {pooling!r}")

    @tf.function(input_signature=specs)
    def serve(*tensors: Any) -> dict[str, Any]:
        feeds = dict(zip(input_names, tensors))
        hidden = encoder(**feeds, training=False).last_hidden_state
        pooled = pool(hidden, feeds["attention_mask"])
        norm = tf.sqrt(tf.reduce_sum(tf.square(pooled), axis=-1, keepdims=True))
        embedding = pooled / tf.maximum(norm, 1e-12)  # torch.nn.functional.normalize(p=2, eps=1e-12)
        return {"sentence_embedding": embedding, "last_hidden_state": hidden}

    concrete = serve.get_concrete_function()
    module = tf.Module()
    module.encoder = encoder
    module.serve = serve
    tf.saved_model.save(module, str(saved_dir), signatures={SIGNATURE: concrete})
    return {
        "tensorflow": tf.__version__,
        "transformers": transformers.__version__,
        "tf_model_class": tf_class.__name__,
        "gelu": gelu if config.hidden_act == "gelu" else config.hidden_act,
    }
