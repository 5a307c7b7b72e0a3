"""ATen ops in TensorFlow: one small function per op of the captured graph (`edgebert.targets.torch_graph`).

Each function computes what the ATen op computes, on static shapes (every node carries its output shape). Integers
are int32 in TensorFlow (TF.js has no int64). An op that is not here is refused by name (`UnsupportedOp`), never
approximated. `Forms` chooses how three ops are written for the runtime, each the same computation:

- `gather_rows`: an embedding lookup as GatherNd of whole rows (TF.js' wasm Gather computes every element's
  coordinates, ~25 ns an element; GatherNd copies rows: 70 us vs 10 us for 16 tokens of a 128-wide table, Node,
  tfjs 4.22).
- `per_head`: a product of two computed [1, heads, m, k] tensors (attention scores, context) as one 2-D MatMul per
  head: TF.js' wasm backend runs a BatchMatMul with batch axes on a slow generic kernel (0.9 GMAC/s) and a 2-D product
  on XNNPACK (4-14 GMAC/s); each head's matrices are taken by GatherNd (`_head_matrices`) and the products stacked
  by Pack, ops short buckets do without: they keep the batched product
  (`edgebert.config.TFJS_BATCHED_ATTENTION_MAX_LEN`).
- `gelu`: "erf" writes x * Phi(x) with Erf (TF.js has Erf, no Erfc); "tf" is tf.nn.gelu (TFLite's converter fuses it
  into its GELU builtin, which has no Erf).
- `arithmetic_masks`: a logical AND of two bool tensors as a product of 0/1 floats, and the branches of a `where`
  brought to the condition's shape by adding a zero of that shape (exact, infinities included: the converter's
  float16 storage turns finfo.min into -inf). transformers 5 builds the attention mask as a [1, 1, T, T] AND then a
  `where` with scalar branches; on TF.js' wasm backend the AND broadcasts in JavaScript and the `where` tiles both
  scalars: 2.6 ms of a 20 ms 128-token call of the `small` student (tf.profile, Node, tfjs 4.22).
- `row_coded_tables`: embedding tables (by parameter key) stored as per-row uint8 codes: the lookup reads the codes
  row and that row's scale and offset (`ROW_SCALE` / `ROW_OFFSET`) and computes codes × scale + offset.
  TF.js' uint8 storage has one scale per tensor; a word table's rows span different ranges, so one scale per row
  keeps each row at 8 bits of its own range (the TF.js target's uint8 recipe, `edgebert.targets.tfjs.convert`).

Dense layers (`aten.linear` on a parameter) are one product of [.., in] by the weight stored as [in, out] (no
transpose in the graph; a [1, T, in] input is one broadcast BatchMatMulV2, no Tensordot reshapes) plus BiasAdd.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

TF_DTYPES = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float32",
             "int64": "int32", "int32": "int32", "int16": "int32", "int8": "int32", "uint8": "int32", "bool": "bool"}  # fmt: skip


ROW_SCALE, ROW_OFFSET = ".row_scale", ".row_offset"  # key suffixes of a row-coded table's per-row scale and offset


class UnsupportedOp(ValueError):
    """A graph op that edgebert cannot write in TensorFlow exactly (the message names it)."""


@dataclass(frozen=True)
class Forms:
    """How the runtime-sensitive ops are written (see the module docstring)."""

    gather_rows: bool = False
    per_head: bool = False
    gelu: str = "erf"
    arithmetic_masks: bool = False
    row_coded_tables: frozenset[str] = frozenset()


@dataclass
class Context:
    """What an op function may read: TensorFlow, the forms, the node's static output shape and dtype, the weight
    variables by parameter key (a Dense weight is stored transposed, `linear_weight`) and the graph's small integer
    constants made by ops (`int_constant`: one node per value in a graph)."""

    tf: Any
    forms: Forms
    shape: list[int] | None = None
    dtype: str | None = None
    weights: Any = None
    constants: dict[tuple[int, ...], Any] = field(default_factory=dict)


def int_constant(ctx: Context, values: tuple[int, ...]) -> Any:
    """An int32 constant of the graph, made once however many ops use it (each Const is a node and a weight entry of
    a TF.js model.json)."""
    if values not in ctx.constants:
        ctx.constants[values] = ctx.tf.constant(list(values), dtype=ctx.tf.int32)
    return ctx.constants[values]


def tf_dtype(tf: Any, name: str | None) -> Any:
    """The TensorFlow dtype that carries a torch dtype name (ints as int32, floats as float32)."""
    if name not in TF_DTYPES:
        raise UnsupportedOp(f"tensors of dtype {name} are not supported")
    return getattr(tf, TF_DTYPES[name])


def _axis(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def _rank(x: Any) -> int:
    return x.shape.rank


# ----------------------------------------------------------------------------------------------- linear algebra
def linear(ctx: Context, x: Any, weight: Any, bias: Any = None) -> Any:
    tf = ctx.tf
    if isinstance(weight, ParamRef) and ctx.weights.has_transposed(weight.key):
        y = tf.matmul(x, ctx.weights.transposed(weight.key))
    else:  # a weight that is also used untransposed elsewhere (a tied decoder): one copy, transposed in the product
        y = tf.matmul(x, _tensor(ctx, weight), transpose_b=True)
    return y if bias is None else tf.nn.bias_add(y, _tensor(ctx, bias))


def matmul(ctx: Context, a: Any, b: Any) -> Any:
    tf = ctx.tf
    a, b = _tensor(ctx, a), _tensor(ctx, b)
    if ctx.forms.per_head and _rank(a) == 4 and _rank(b) == 4 and a.shape[0] == 1 and b.shape[0] == 1:
        pairs = zip(_head_matrices(ctx, a), _head_matrices(ctx, b))
        return tf.expand_dims(tf.stack([tf.matmul(x, y) for x, y in pairs], axis=0), 0)
    return tf.matmul(a, b)


def _head_matrices(ctx: Context, x: Any) -> list[Any]:
    """The [m, k] matrix of each head of a [1, heads, m, k] tensor, one GatherNd each. TF.js' wasm Unpack (and
    Slice, Split) copies its whole input out of the wasm heap for every output; GatherNd copies one row block in
    wasm: splitting 12 x 128 x 128 attention scores 9.2 ms -> 0.6 ms (Node 20, tfjs 4.22, AMD EPYC, loaded).
    The teacher's 128-token call 1.40x faster (benchmarks/README.md, TF.js graph forms)."""
    return [ctx.tf.gather_nd(x, int_constant(ctx, (0, h))) for h in range(x.shape[1])]


def embedding(ctx: Context, weight: Any, ids: Any, padding_idx: int = -1, *rest: Any) -> Any:
    tf = ctx.tf
    ids = tf.cast(_tensor(ctx, ids), tf.int32)
    if isinstance(weight, ParamRef) and weight.key in ctx.forms.row_coded_tables:
        codes, scale, offset = (_lookup(ctx, ctx.weights.plain(k), ids) for k in (weight.key, weight.key + ROW_SCALE, weight.key + ROW_OFFSET))
        return codes * scale + offset
    return _lookup(ctx, _tensor(ctx, weight), ids)


def _lookup(ctx: Context, table: Any, ids: Any) -> Any:
    tf = ctx.tf
    if ctx.forms.gather_rows:
        return tf.gather_nd(table, tf.expand_dims(ids, -1))
    return tf.gather(table, ids)


def layer_norm(ctx: Context, x: Any, shape: list[int], weight: Any = None, bias: Any = None, eps: float = 1e-5, *rest: Any) -> Any:
    tf = ctx.tf
    axes = list(range(-len(shape), 0))
    mean = tf.reduce_mean(x, axis=axes, keepdims=True)
    variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=axes, keepdims=True)
    scale = tf.math.rsqrt(variance + eps)
    if weight is not None:
        scale = scale * _tensor(ctx, weight)
    shift = -mean * scale if bias is None else _tensor(ctx, bias) - mean * scale
    return x * scale + shift


# ------------------------------------------------------------------------------------------------- activations
def gelu(ctx: Context, x: Any, approximate: str = "none") -> Any:
    tf = ctx.tf
    if approximate == "tanh":
        return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
    if ctx.forms.gelu == "tf":
        return tf.nn.gelu(x, approximate=False)
    return 0.5 * x * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))


def softmax(ctx: Context, x: Any, dim: int, half_to_float: bool = False) -> Any:
    return ctx.tf.nn.softmax(x, axis=dim)


def log_softmax(ctx: Context, x: Any, dim: int, half_to_float: bool = False) -> Any:
    return ctx.tf.nn.log_softmax(x, axis=dim)


# ------------------------------------------------------------------------------------------------- elementwise
def _binary(fn: Callable[[Any, Any, Any], Any]) -> Callable[..., Any]:
    def op(ctx: Context, a: Any, b: Any, **kwargs: Any) -> Any:
        a, b = _operands(ctx, a, b)
        return fn(ctx.tf, a, b, **kwargs)

    return op


def _operands(ctx: Context, a: Any, b: Any) -> tuple[Any, Any]:
    """Two operands as tensors of the node's dtype (a Python scalar takes the other's dtype, as in torch)."""
    tf = ctx.tf
    out = tf_dtype(tf, ctx.dtype)
    if ctx.dtype == "bool":  # comparisons: compare in the operands' own (promoted) dtype
        tensors = [_tensor(ctx, v) for v in (a, b) if not _is_scalar(v)]
        out = tensors[0].dtype if tensors else tf.float32
        if any(t.dtype.is_floating for t in tensors):
            out = tf.float32
    return _cast(ctx, a, out), _cast(ctx, b, out)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def _cast(ctx: Context, value: Any, dtype: Any) -> Any:
    tf = ctx.tf
    if _is_scalar(value):
        return tf.constant(value, dtype=dtype)
    value = _tensor(ctx, value)
    return value if value.dtype == dtype else tf.cast(value, dtype)


def _add(tf: Any, a: Any, b: Any, alpha: Any = 1) -> Any:
    return tf.add(a, b if alpha == 1 else b * alpha)


def _sub(tf: Any, a: Any, b: Any, alpha: Any = 1) -> Any:
    return tf.subtract(a, b if alpha == 1 else b * alpha)


def _div(tf: Any, a: Any, b: Any, rounding_mode: str | None = None) -> Any:
    if rounding_mode is None:
        return tf.divide(a, b) if a.dtype.is_floating else tf.divide(tf.cast(a, tf.float32), tf.cast(b, tf.float32))
    if rounding_mode == "floor":
        return tf.math.floordiv(a, b)
    return tf.cast(tf.truncatediv(a, b), a.dtype) if not a.dtype.is_floating else tf.sign(a / b) * tf.floor(tf.abs(a / b))


def _logical(name: str) -> Callable[..., Any]:
    def op(ctx: Context, a: Any, b: Any) -> Any:
        tf = ctx.tf
        a, b = _operands(ctx, a, b)
        if a.dtype != tf.bool:
            raise UnsupportedOp(f"bitwise {name} of {a.dtype.name} tensors is not supported")
        if name == "and" and ctx.forms.arithmetic_masks:
            return tf.cast(tf.cast(a, tf.float32) * tf.cast(b, tf.float32), tf.bool)
        return getattr(tf.math, f"logical_{name}")(a, b)

    return op


def rsub(ctx: Context, a: Any, b: Any, alpha: Any = 1) -> Any:
    a, b = _operands(ctx, a, b)
    return ctx.tf.subtract(b, a if alpha == 1 else a * alpha)


def where(ctx: Context, condition: Any, a: Any, b: Any) -> Any:
    tf = ctx.tf
    out = tf_dtype(tf, ctx.dtype)
    a, b = _cast(ctx, a, out), _cast(ctx, b, out)
    condition = _tensor(ctx, condition)
    if ctx.forms.arithmetic_masks and out.is_floating and (a.shape != condition.shape or b.shape != condition.shape):
        zero = tf.cast(condition, out) * 0.0  # the condition's shape: both branches broadcast by an add, not a tile
        a, b = a + zero, b + zero
    return tf.where(condition, a, b)


def masked_fill(ctx: Context, x: Any, mask: Any, value: Any) -> Any:
    x = _tensor(ctx, x)
    return ctx.tf.where(_tensor(ctx, mask), _cast(ctx, value, x.dtype), x)


def _unary(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def op(ctx: Context, x: Any) -> Any:
        return fn(ctx.tf, _tensor(ctx, x))

    return op


def pow_scalar(ctx: Context, x: Any, exponent: Any) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    if exponent == 2:
        return tf.square(x)
    if exponent == 0.5:
        return tf.sqrt(x)
    return tf.pow(x, tf.constant(exponent, dtype=x.dtype))


def clamp(ctx: Context, x: Any, low: Any = None, high: Any = None) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    if low is not None:
        x = tf.maximum(x, _cast(ctx, low, x.dtype))
    if high is not None:
        x = tf.minimum(x, _cast(ctx, high, x.dtype))
    return x


def clamp_max(ctx: Context, x: Any, high: Any) -> Any:
    return clamp(ctx, x, None, high)


def to_copy(ctx: Context, x: Any, **kwargs: Any) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    dtype = tf_dtype(tf, ctx.dtype)
    return x if x.dtype == dtype else tf.cast(x, dtype)


def type_as(ctx: Context, x: Any, other: Any) -> Any:
    return to_copy(ctx, x)


# ------------------------------------------------------------------------------------------------------ shapes
def reshape(ctx: Context, x: Any, *rest: Any) -> Any:
    return ctx.tf.reshape(_tensor(ctx, x), ctx.shape)


def expand(ctx: Context, x: Any, *rest: Any, **kwargs: Any) -> Any:
    x = _tensor(ctx, x)
    return x if list(x.shape) == ctx.shape else ctx.tf.broadcast_to(x, ctx.shape)


def repeat(ctx: Context, x: Any, repeats: list[int]) -> Any:
    """torch's `x.repeat(*repeats)`: tiled copies, leading axes added when `repeats` is longer than the rank
    (DeBERTa's relative-position tables per batch row)."""
    x = _tensor(ctx, x)
    extra = len(repeats) - _rank(x)
    if extra > 0:
        x = ctx.tf.reshape(x, [1] * extra + list(x.shape))
    return ctx.tf.tile(x, list(repeats))


def transpose(ctx: Context, x: Any, dim0: int, dim1: int) -> Any:
    x = _tensor(ctx, x)
    perm = list(range(_rank(x)))
    a, b = _axis(dim0, len(perm)), _axis(dim1, len(perm))
    perm[a], perm[b] = perm[b], perm[a]
    return ctx.tf.transpose(x, perm=perm)


def permute(ctx: Context, x: Any, dims: list[int]) -> Any:
    x = _tensor(ctx, x)
    return ctx.tf.transpose(x, perm=[_axis(d, _rank(x)) for d in dims])


def slice_op(ctx: Context, x: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    """x[..., start:end:step, ...]; torch's open ends (2**63 - 1) become open slices: tfjs reads slice bounds as int32,
    where that sentinel wraps to -1 and drops the last element (ModernBERT's rotary `x[..., d // 2:]`)."""
    x = _tensor(ctx, x)
    axis = _axis(dim, _rank(x))
    size = x.shape[axis]
    if size is not None:
        end = None if end is not None and end >= size else end
        start = None if start is not None and start <= -size else start
    index = [slice(None)] * _rank(x)
    index[axis] = slice(start, end, step)
    return x[tuple(index)]


def select(ctx: Context, x: Any, dim: int, index: int) -> Any:
    x = _tensor(ctx, x)
    where_ = [slice(None)] * _rank(x)
    where_[_axis(dim, _rank(x))] = index
    return x[tuple(where_)]


def concat(ctx: Context, tensors: list[Any], dim: int = 0) -> Any:
    dtype = tf_dtype(ctx.tf, ctx.dtype)
    return ctx.tf.concat([_cast(ctx, t, dtype) for t in tensors], axis=dim)


def stack(ctx: Context, tensors: list[Any], dim: int = 0) -> Any:
    return ctx.tf.stack([_tensor(ctx, t) for t in tensors], axis=dim)


def split(ctx: Context, x: Any, sizes: Any, dim: int = 0) -> Any:
    x = _tensor(ctx, x)
    axis = _axis(dim, _rank(x))
    if isinstance(sizes, int):
        total = x.shape[axis]
        sizes = [min(sizes, total - i) for i in range(0, total, sizes)]
    return tuple(ctx.tf.split(x, sizes, axis=axis))


def unbind(ctx: Context, x: Any, dim: int = 0) -> Any:
    """The slices of `x` along `dim`, that axis removed (ModernBERT's q, k, v from its fused projection)."""
    x = _tensor(ctx, x)
    return tuple(ctx.tf.unstack(x, axis=_axis(dim, _rank(x))))


def index(ctx: Context, x: Any, indices: list[Any]) -> Any:
    """Advanced indexing x[i0, i1, ...] with index tensors on the leading axes (broadcast together)."""
    tf, x = ctx.tf, _tensor(ctx, x)
    if any(i is None for i in indices):
        raise UnsupportedOp("aten.index with a skipped axis (None before an index tensor) is not supported")
    tensors = [tf.cast(_tensor(ctx, i), tf.int32) for i in indices]
    shape = tensors[0].shape
    for t in tensors[1:]:
        shape = tf.broadcast_static_shape(shape, t.shape)
    stacked = tf.stack([tf.broadcast_to(t, shape) for t in tensors], axis=-1)
    return tf.gather_nd(x, stacked)


def index_select(ctx: Context, x: Any, dim: int, index: Any) -> Any:
    """x's entries `index` along `dim`; a constant run of consecutive indices is a slice (XLNet's relative shift keeps
    the first `length` columns: a slice is a copy, TF.js' wasm Gather computes every element's coordinates)."""
    tf, x = ctx.tf, _tensor(ctx, x)
    ids, axis = _tensor(ctx, index), _axis(dim, _rank(x))
    known = tf.get_static_value(ids)
    if known is not None and known.ndim == 1 and known.size and (known[1:] - known[:-1] == 1).all() and known[0] >= 0:
        return slice_op(ctx, x, axis, int(known[0]), int(known[0]) + int(known.size))
    return tf.gather(x, tf.cast(ids, tf.int32), axis=axis)


def gather(ctx: Context, x: Any, dim: int, index: Any, sparse_grad: bool = False) -> Any:
    """torch.gather: out[i...] = x[i... with axis `dim` replaced by index[i...]], as one GatherNd over coordinates."""
    tf, x = ctx.tf, _tensor(ctx, x)
    ids = tf.cast(_tensor(ctx, index), tf.int32)
    shape, axis = list(ids.shape), _axis(dim, _rank(x))
    if _rank(x) == 2 and axis == 1 and shape[0] == x.shape[0]:
        return tf.gather(x, ids, axis=1, batch_dims=1)
    grid = tf.meshgrid(*[tf.range(n) for n in shape], indexing="ij")
    grid[axis] = ids
    return tf.gather_nd(x, tf.stack(grid, axis=-1))


# -------------------------------------------------------------------------------------------------- reductions
def _dims(dims: Any, rank: int) -> list[int]:
    if dims is None or dims == []:
        return list(range(rank))
    return [_axis(d, rank) for d in ([dims] if isinstance(dims, int) else dims)]


def reduce_sum(ctx: Context, x: Any, dims: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    x = tf.cast(x, tf_dtype(tf, ctx.dtype)) if x.dtype != tf_dtype(tf, ctx.dtype) else x
    return tf.reduce_sum(x, axis=_dims(dims, _rank(x)), keepdims=keepdim)


def reduce_mean(ctx: Context, x: Any, dims: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    x = _tensor(ctx, x)
    return ctx.tf.reduce_mean(x, axis=_dims(dims, _rank(x)), keepdims=keepdim)


def amax(ctx: Context, x: Any, dims: Any = None, keepdim: bool = False) -> Any:
    x = _tensor(ctx, x)
    return ctx.tf.reduce_max(x, axis=_dims(dims, _rank(x)), keepdims=keepdim)


def max_dim(ctx: Context, x: Any, dim: int, keepdim: bool = False) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    axis = _axis(dim, _rank(x))
    values, ids = tf.reduce_max(x, axis=axis, keepdims=keepdim), tf.argmax(x, axis=axis, output_type=tf.int32)
    return values, (tf.expand_dims(ids, axis) if keepdim else ids)


def argmax(ctx: Context, x: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    if dim is None:
        return tf.argmax(tf.reshape(x, [-1]), output_type=tf.int32)
    ids = tf.argmax(x, axis=_axis(dim, _rank(x)), output_type=tf.int32)
    return tf.expand_dims(ids, _axis(dim, _rank(x))) if keepdim else ids


def vector_norm(ctx: Context, x: Any, order: Any = 2, dims: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    if order != 2:
        raise UnsupportedOp(f"aten.linalg_vector_norm of order {order} is not supported (only 2)")
    return tf.sqrt(tf.reduce_sum(tf.square(x), axis=_dims(dims, _rank(x)), keepdims=keepdim))


def cumsum(ctx: Context, x: Any, dim: int, dtype: Any = None) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    return tf.cumsum(tf.cast(x, tf_dtype(tf, ctx.dtype)), axis=_axis(dim, _rank(x)))


def one_hot(ctx: Context, x: Any, num_classes: int = -1) -> Any:
    """torch's one_hot (int64 -> int32 here); the class count comes from the node's static shape (XLNet's relative
    segment encodings: two classes)."""
    tf, x = ctx.tf, _tensor(ctx, x)
    depth = ctx.shape[-1] if num_classes == -1 else num_classes
    return tf.one_hot(tf.cast(x, tf.int32), depth, dtype=tf_dtype(tf, ctx.dtype))


def topk(ctx: Context, x: Any, k: int, dim: int = -1, largest: bool = True, sorted_: bool = True) -> Any:
    tf, x = ctx.tf, _tensor(ctx, x)
    if _axis(dim, _rank(x)) != _rank(x) - 1 or not largest:
        raise UnsupportedOp("aten.topk is supported over the last axis, largest first")
    top = tf.math.top_k(x, k=k, sorted=True)
    return top.values, tf.cast(top.indices, tf.int32)


# --------------------------------------------------------------------------------------------------- plumbing
class ParamRef:
    """A reference to a parameter (by state-dict key), resolved by the op that uses it."""

    def __init__(self, key: str) -> None:
        self.key = key


def _tensor(ctx: Context, value: Any) -> Any:
    if isinstance(value, ParamRef):
        return ctx.weights.plain(value.key)
    return value


OPS: dict[str, Callable[..., Any]] = {
    "aten.linear.default": linear,
    "aten.matmul.default": matmul,
    "aten.bmm.default": matmul,
    "aten.mm.default": matmul,
    "aten.embedding.default": embedding,
    "aten.layer_norm.default": layer_norm,
    "aten.gelu.default": gelu,
    "aten.softmax.int": softmax,
    "aten._softmax.default": softmax,
    "aten.log_softmax.int": log_softmax,
    "aten.add.Tensor": _binary(_add),
    "aten.add.Scalar": _binary(_add),
    "aten.sub.Tensor": _binary(_sub),
    "aten.sub.Scalar": _binary(_sub),
    "aten.rsub.Scalar": rsub,
    "aten.rsub.Tensor": rsub,
    "aten.mul.Tensor": _binary(lambda tf, a, b: tf.multiply(a, b)),
    "aten.mul.Scalar": _binary(lambda tf, a, b: tf.multiply(a, b)),
    "aten.div.Tensor": _binary(_div),
    "aten.div.Scalar": _binary(_div),
    "aten.div.Tensor_mode": _binary(_div),
    "aten.maximum.default": _binary(lambda tf, a, b: tf.maximum(a, b)),
    "aten.minimum.default": _binary(lambda tf, a, b: tf.minimum(a, b)),
    "aten.eq.Scalar": _binary(lambda tf, a, b: tf.equal(a, b)),
    "aten.eq.Tensor": _binary(lambda tf, a, b: tf.equal(a, b)),
    "aten.ne.Scalar": _binary(lambda tf, a, b: tf.not_equal(a, b)),
    "aten.ne.Tensor": _binary(lambda tf, a, b: tf.not_equal(a, b)),
    "aten.ge.Scalar": _binary(lambda tf, a, b: tf.greater_equal(a, b)),
    "aten.ge.Tensor": _binary(lambda tf, a, b: tf.greater_equal(a, b)),
    "aten.gt.Scalar": _binary(lambda tf, a, b: tf.greater(a, b)),
    "aten.gt.Tensor": _binary(lambda tf, a, b: tf.greater(a, b)),
    "aten.le.Scalar": _binary(lambda tf, a, b: tf.less_equal(a, b)),
    "aten.le.Tensor": _binary(lambda tf, a, b: tf.less_equal(a, b)),
    "aten.lt.Scalar": _binary(lambda tf, a, b: tf.less(a, b)),
    "aten.lt.Tensor": _binary(lambda tf, a, b: tf.less(a, b)),
    "aten.__and__.Tensor": _logical("and"),
    "aten.bitwise_and.Tensor": _logical("and"),
    "aten.logical_and.default": _logical("and"),
    "aten.__or__.Tensor": _logical("or"),
    "aten.bitwise_or.Tensor": _logical("or"),
    "aten.logical_or.default": _logical("or"),
    "aten.bitwise_not.default": _unary(lambda tf, x: tf.logical_not(x)),
    "aten.logical_not.default": _unary(lambda tf, x: tf.logical_not(x)),
    "aten.where.self": where,
    "aten.where.ScalarOther": where,
    "aten.where.ScalarSelf": where,
    "aten.where.Scalar": where,
    "aten.masked_fill.Scalar": masked_fill,
    "aten.masked_fill.Tensor": masked_fill,
    "aten.neg.default": _unary(lambda tf, x: tf.negative(x)),
    "aten.exp.default": _unary(lambda tf, x: tf.exp(x)),
    "aten.log.default": _unary(lambda tf, x: tf.math.log(x)),
    "aten.sqrt.default": _unary(lambda tf, x: tf.sqrt(x)),
    "aten.rsqrt.default": _unary(lambda tf, x: tf.math.rsqrt(x)),
    "aten.tanh.default": _unary(lambda tf, x: tf.tanh(x)),
    "aten.relu.default": _unary(lambda tf, x: tf.nn.relu(x)),
    "aten.sigmoid.default": _unary(lambda tf, x: tf.sigmoid(x)),
    "aten.erf.default": _unary(lambda tf, x: tf.math.erf(x)),
    "aten.abs.default": _unary(lambda tf, x: tf.abs(x)),
    "aten.sin.default": _unary(lambda tf, x: tf.sin(x)),
    "aten.cos.default": _unary(lambda tf, x: tf.cos(x)),
    "aten.square.default": _unary(lambda tf, x: tf.square(x)),
    "aten.pow.Tensor_Scalar": pow_scalar,
    "aten.clamp.default": clamp,
    "aten.clamp_min.default": clamp,
    "aten.clamp_max.default": clamp_max,
    "aten._to_copy.default": to_copy,
    "aten.to.dtype": to_copy,
    "aten.type_as.default": type_as,
    "aten.view.default": reshape,
    "aten.reshape.default": reshape,
    "aten._unsafe_view.default": reshape,
    "aten.unsqueeze.default": reshape,
    "aten.squeeze.dim": reshape,
    "aten.squeeze.dims": reshape,
    "aten.squeeze.default": reshape,
    "aten.flatten.using_ints": reshape,
    "aten.expand.default": expand,
    "aten.expand_as.default": expand,
    "aten.repeat.default": repeat,
    "aten.transpose.int": transpose,
    "aten.permute.default": permute,
    "aten.t.default": lambda ctx, x: transpose(ctx, x, 0, 1),
    "aten.slice.Tensor": slice_op,
    "aten.select.int": select,
    "aten.cat.default": concat,
    "aten.stack.default": stack,
    "aten.split.Tensor": split,
    "aten.split_with_sizes.default": split,
    "aten.unbind.int": unbind,
    "aten.index.Tensor": index,
    "aten.gather.default": gather,
    "aten.index_select.default": index_select,
    "aten.sum.dim_IntList": reduce_sum,
    "aten.sum.default": reduce_sum,
    "aten.mean.dim": reduce_mean,
    "aten.mean.default": reduce_mean,
    "aten.amax.default": amax,
    "aten.max.dim": max_dim,
    "aten.argmax.default": argmax,
    "aten.linalg_vector_norm.default": vector_norm,
    "aten.cumsum.default": cumsum,
    "aten.topk.default": topk,
    "aten.one_hot.default": one_hot,
}
