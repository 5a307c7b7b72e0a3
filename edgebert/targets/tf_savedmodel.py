"""A TensorFlow SavedModel of a model directory's sentence embedder, shared by the TF-based export paths.

Runs only in a TensorFlow subprocess (`edgebert.targets.tf_subprocess`: `edgebert.targets.tfjs.convert` and the
TFLite fallback in `edgebert.targets.tflite.exporter`): transformers' TF class for the family is built from the PyTorch weights and wrapped
in a `tf.function` with int32 inputs of fixed shape [1, seq_len] that pools like
`edgebert.pooling.SentenceEmbedder` and L2-normalises.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from edgebert.families import Family

SIGNATURE = "serving_default"


def _use_erf_gelu() -> str:
    """Make transformers' TF "gelu" the explicit erf formula instead of Keras' exact GELU (which uses Erfc).

    Both compute x * Phi(x) exactly; tfjs has an Erf kernel but no Erfc, so the converter rejects the Keras form.
    """
    from transformers import activations_tf

    activations_tf.ACT2FN["gelu"] = activations_tf._gelu
    return "erf"


class _StandIn:
    """A stand-in for a module's `tf`: TensorFlow's own attribute for every name the subclass does not define."""

    def __init__(self, tf: Any) -> None:
        self._tf = tf

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tf, name)


class _TFJSOps(_StandIn):
    """A stand-in for the `tf` module inside transformers' TF modeling code (the module of a TF model class, e.g.
    modeling_tf_bert) that writes two of its calls in the forms TF.js' wasm backend runs fast; everything else is
    TensorFlow's own, and both forms compute the same values (tests/test_export_tfjs.py compares them).

    `gather_rows`: an embedding lookup `tf.gather(params=table, indices=ids)` becomes `tf.gather_nd(table, ids[..., None])`.
    The wasm Gather kernel computes every output element's coordinates (~25 ns an element: 70 us for 16 tokens of a
    128-wide table, 180 us at 384, and 8x that at 128 tokens); GatherNd copies whole rows (~10 us). Measured in Node,
    tfjs 4.22, medians of 300 calls on a shared machine.

    `per_head`: `matmul` splits a 4-D [1, heads, m, k] product into one 2-D product per head. Why: TF.js' wasm
    backend runs a BatchMatMul with batch dimensions, or with transpose_b, on a slow generic kernel (measured in Node,
    tfjs 4.22: 0.9 GMAC/s) and a plain 2-D product on XNNPACK (4-14 GMAC/s). The attention scores (Q K^T) and context
    (P V) products are batched over heads: in all-MiniLM-L6-v2 at seq 128 they are 5 % of the multiply-adds but about
    a third of the TF.js time. Keys are transposed once per layer (a cheap copy) so that no product needs
    transpose_b. Measured on that teacher (fp32, Node wasm, 40 calls, two alternating runs): the products fall from
    155-187 ms to 95-100 ms, of which the per-head Unpack copies give back 16-33 ms; a call is median 171-203 ms
    against 210-224 ms batched (fastest call 144-150 vs 182-192). Strided slices instead of Unpack were slower still
    (median 233-274 ms). The split costs ops (Unpack, Pack, one product per head), so short buckets keep the batched
    form (`edgebert.config.TFJS_BATCHED_ATTENTION_MAX_LEN`).
    """

    def __init__(self, tf: Any, per_head: bool, gather_rows: bool) -> None:
        super().__init__(tf)
        self._per_head, self._gather_rows = per_head, gather_rows

    def gather(self, params: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
        tf = self._tf
        if not self._gather_rows or args or set(kwargs) - {"name"} or params.shape.rank != 2:
            return tf.gather(params, indices, *args, **kwargs)
        return tf.gather_nd(params, tf.expand_dims(indices, -1), **kwargs)

    def matmul(self, a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False, **kwargs: Any) -> Any:
        tf = self._tf
        shapes = (a.shape, b.shape)
        split = self._per_head and not transpose_a and not kwargs
        if not split or any(s.rank != 4 or not s.is_fully_defined() or s[0] != 1 for s in shapes):
            return tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, **kwargs)
        if transpose_b:
            b = tf.transpose(b, perm=[0, 1, 3, 2])
        heads = zip(tf.unstack(a[0], axis=0), tf.unstack(b[0], axis=0))
        return tf.expand_dims(tf.stack([tf.matmul(x, y) for x, y in heads], axis=0), 0)


class _DenseOps(_StandIn):
    """A stand-in for the `tf` module inside Keras' Dense layer that writes a Dense on a [1, T, in] input as one
    product broadcast over the batch axis (`tf.matmul` of [1, T, in] by [in, out]: BatchMatMulV2) instead of Keras'
    `tf.tensordot`, which is a Reshape to [T, in], a MatMul and a Reshape back. Same product, same kernel in tfjs
    (its matMul broadcasts the batch axis), two graph nodes fewer per Dense layer: on the wasm backend each node
    costs JavaScript around its kernel (benchmarks/README.md, "A smaller fixed cost per TF.js call": 1-3 % of a
    16-token call). Any other tensordot (a dynamic shape, a batch above 1, other axes) is TensorFlow's own.
    """

    def tensordot(self, a: Any, b: Any, axes: Any, name: Any = None) -> Any:
        tf, shape = self._tf, a.shape
        if shape.rank == 3 and shape.is_fully_defined() and shape[0] == 1 and b.shape.rank == 2 and axes == [[2], [0]]:
            return tf.matmul(a, b, name=name)
        return tf.tensordot(a, b, axes, name=name)


@contextlib.contextmanager
def tfjs_ops(module: Any, per_head: bool = False, gather_rows: bool = False, dense_matmul: bool = False) -> Iterator[None]:
    """Within the block, the TF modeling code of `module` (e.g. modeling_tf_bert, which calls `tf.matmul` and
    `tf.gather`) computes attention with per-head 2-D products (`per_head`) and looks embeddings up by whole rows
    (`gather_rows`), see `_TFJSOps`; and Keras' Dense layers multiply a [1, T, in] input without reshapes
    (`dense_matmul`, see `_DenseOps`). None: TensorFlow's own calls."""
    import tensorflow as tf
    from tf_keras.src.layers.core import dense

    module.tf = _TFJSOps(tf, per_head, gather_rows) if per_head or gather_rows else tf
    keras_tf = dense.tf
    if dense_matmul:
        dense.tf = _DenseOps(keras_tf)
    try:
        yield
    finally:
        module.tf, dense.tf = tf, keras_tf


def build_saved_model(
    model_dir: Path,
    lengths: int | dict[str, int],
    pooling: str,
    family: Family,
    saved_dir: Path,
    erf_gelu: bool = True,
    per_head: bool | Collection[str] = False,
    gather_rows: bool = False,
    dense_matmul: bool = False,
    task: str = "feature-extraction",
    top_k: int = 0,
) -> dict:
    """Write a SavedModel whose signatures map the family's int32 [1, length] inputs to the named outputs: the
    sentence embedding and token states, or a task head's (`edgebert.task_heads`) computed by transformers' TF class
    of the model's own architecture (`TF<architecture>`, e.g. TFBertForSequenceClassification).

    `lengths`: {signature: its sequence length}; one length means `serving_default`. The signatures share the
    model's variables (one copy of the weights). `per_head`: True, or the signatures, whose attention is traced as one
    2-D product per head; the others keep transformers' batched products. `gather_rows`: embedding lookups as
    GatherNd (see `_TFJSOps`; for TF.js). `dense_matmul`: Dense layers as one broadcast product (`_DenseOps`; for TF.js)."""
    import tensorflow as tf
    import transformers

    gelu = _use_erf_gelu() if erf_gelu else "keras"
    tf_class = _tf_class(transformers, model_dir, family, task)
    encoder = load_tf_model(tf_class, model_dir, family)
    config = encoder.config
    activation = getattr(config, family.activation_field, "gelu")
    if activation not in ("gelu", "gelu_new", "relu", "gelu_fast", "quick_gelu"):
        raise SystemExit(f"unsupported {family.activation_field} {activation!r} for the TF.js path")

    input_names = family.input_names()
    lengths = lengths if isinstance(lengths, dict) else {SIGNATURE: lengths}

    from edgebert.heads import tf_sentence_vector
    from edgebert.modeldir import resolve_stack
    from edgebert.task_heads import tf_task_outputs

    stack = resolve_stack(Path(model_dir), family.default_pooling)
    if task == "feature-extraction" and "+".join(stack.pooling) != pooling:
        raise SystemExit(f"the model's pooling is {'+'.join(stack.pooling)}, the export asked for {pooling}")

    @tf.function
    def serve(*tensors: Any) -> dict[str, Any]:
        feeds = dict(zip(input_names, tensors))
        if task != "feature-extraction":
            return tf_task_outputs(tf, task, encoder(**feeds, training=False).logits, top_k)
        hidden = encoder(**feeds, training=False).last_hidden_state
        embedding = tf_sentence_vector(tf, stack, hidden, feeds["attention_mask"])
        return {"sentence_embedding": embedding, "last_hidden_state": hidden}

    split = set(lengths) if per_head is True else set(per_head or ())
    concrete = {}
    for name, n in lengths.items():  # each length is its own trace: per-head or batched attention, as asked
        ops = tfjs_ops(sys.modules[tf_class.__module__], per_head=name in split, gather_rows=gather_rows, dense_matmul=dense_matmul)
        with ops:
            concrete[name] = serve.get_concrete_function(*[tf.TensorSpec([1, n], tf.int32, name=i) for i in input_names])
    module = tf.Module()
    module.encoder = encoder
    module.serve = serve
    tf.saved_model.save(module, str(saved_dir), signatures=concrete)
    return {
        "tensorflow": tf.__version__,
        "transformers": transformers.__version__,
        "tf_model_class": tf_class.__name__,
        "gelu": gelu if activation == "gelu" else activation,
        "attention_products": {name: "per_head_2d" if name in split else "batched" for name in lengths},
        "embedding_lookup": "gather_nd" if gather_rows else "gather",
        "dense_products": "broadcast_matmul" if dense_matmul else "tensordot",
    }


def _tf_class(transformers: Any, model_dir: Path, family: Family, task: str) -> Any:
    """The TF class to build: the family's base model (feature extraction) or the TF twin of the model's head class."""
    if family.tf_model_class is None:
        raise SystemExit(f"the {family.name} family has no TensorFlow class")
    if task == "feature-extraction":
        return getattr(transformers, family.tf_model_class)
    from transformers import AutoConfig

    from edgebert.task_heads import architecture_class

    name = "TF" + architecture_class(AutoConfig.from_pretrained(model_dir, trust_remote_code=False), task)
    if not hasattr(transformers, name):
        raise SystemExit(f"transformers has no TensorFlow class {name} for this model's {task} head")
    return getattr(transformers, name)


def load_tf_model(tf_class: Any, model_dir: str | Path, family: Family) -> Any:
    """`tf_class.from_pretrained(model_dir, from_pt=True)` that also honours `config.pruned_heads` and the model's
    pad id where the TF class hard-codes one (`Family.tf_match_pad`).

    transformers' TF BERT layers ignore `pruned_heads` (their `prune_heads` raises NotImplementedError), so a
    head-pruned PyTorch checkpoint does not fit them ("cannot reshape array of size 768 into shape (32,32)").
    This builds the TF model from its config, shrinks each layer's query/key/value Dense layers and the input of
    its attention-output Dense to the heads that remain *before* the variables exist, then loads the PyTorch
    weights the way from_pretrained(from_pt=True) does. Without pruned heads it is plain from_pretrained.
    Runs in a TensorFlow process (TF.js / TFLite fallback converters).
    """
    from transformers import AutoConfig
    from transformers.modeling_tf_pytorch_utils import (
        load_pytorch_checkpoint_in_tf2_model,
    )

    model_dir = Path(model_dir)
    config = AutoConfig.from_pretrained(model_dir, trust_remote_code=False)
    pruned = {int(k): set(v) for k, v in (getattr(config, "pruned_heads", None) or {}).items() if v}
    if not pruned:
        model = tf_class.from_pretrained(str(model_dir), from_pt=True, trust_remote_code=False)
        family.tf_match_pad(model, config)
        return model
    weights = sorted(model_dir.glob("model*.safetensors")) or sorted(model_dir.glob("pytorch_model*.bin"))
    if not weights:
        raise FileNotFoundError(f"no PyTorch weights in {model_dir}")
    model = tf_class(config)
    for index, layer in enumerate(family.tf_layers(model)):
        if pruned.get(index):
            _narrow_attention(layer, family, len(pruned[index]))
    model.build_in_name_scope()
    load_pytorch_checkpoint_in_tf2_model(model, [str(w) for w in weights], allow_missing_keys=True)
    family.tf_match_pad(model, config)
    return model


def _narrow_attention(layer: Any, family: Family, removed: int) -> None:
    """Shrink one (unbuilt) TF layer's attention to its remaining heads: query/key/value Dense layers with fewer
    units, and an attention-output Dense that takes that many inputs."""
    attention = family.tf_module(layer, "attention")
    before = int(getattr(attention, family.tf_heads_attr))
    heads = before - removed
    width = heads * (int(getattr(attention, family.tf_width_attr)) // before)
    setattr(attention, family.tf_heads_attr, heads)
    setattr(attention, family.tf_width_attr, width)
    for role in ("query", "key", "value"):
        old = family.tf_module(layer, role)
        family.replace_tf_module(layer, role, type(old).from_config({**old.get_config(), "units": width}))
    output = family.tf_module(layer, "attention_output")
    output.build = _narrowed_build(output.build, width)


def _narrowed_build(build: Any, width: int) -> Any:
    """`build` of a Dense layer that ignores the input width it is given and takes `width` inputs.

    transformers' TF build methods build each sublayer, in its name scope, from `config.hidden_size`; the
    attention-output Dense takes the concatenated remaining heads instead. Replacing only its build keeps the
    enclosing block's own code (and so the variable names the PyTorch weights load by).
    """
    import tensorflow as tf

    def narrowed(input_shape: Any = None) -> None:
        shape = tf.TensorShape(input_shape) if input_shape is not None else tf.TensorShape([None, None, None])
        build(shape[:-1].concatenate([width]))

    return narrowed
