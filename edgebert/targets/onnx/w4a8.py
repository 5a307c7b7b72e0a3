"""The ONNX `w4a8` recipe's storage: the int8 recipe's graph with every weight it holds stored at 4 bits.

The int8 recipe multiplies uint8 activations by 7-bit int8 weights (MatMulInteger), keeps its float islands' weights
as int8 codes times a scale, and stores the tables as int8. `w4a8` keeps that graph and those kernels, and stores each
int8 weight as its two-level 4-bit codes (`edgebert.weight_grids.two_level_int4_codes`): 4-bit values, a 4-bit
multiplier per block of 32 and one float scale per output channel (a table: per row). A few standard ONNX ops rebuild
the int8 codes from them (Cast, Mul, Reshape, Transpose, all in int8); every input is a constant, so onnxruntime folds them
into the int8 weight at load and runs the int8 recipe's kernels on it. The rebuilt codes are exact integers: what
runs is the grid, on every CPU, and a model trained on the `onnx-w4a8` grid is computed as it was trained.

A table's per-row scale is looked up with its rows (Gather, Cast, Mul) instead of the int8 recipe's one scale a table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgebert.errors import UserError
from edgebert.weight_grids import INT4_BLOCK, two_level_int4_codes

OPSET = 21  # 4-bit tensors and their Cast
IR_VERSION = 10
QUANTIZED, WEIGHT_ONLY, SCALE = "_quantized", "_int8", "_scale"  # onnxruntime's and `weight_only_int8`'s names


def store_at_four_bits(model: Any, floats: dict[str, np.ndarray]) -> None:
    """Rewrite the int8 recipe's `model` in place: each int8 weight and table rebuilt from two-level 4-bit codes of
    its float original (`floats`: the fp32 graph's initializers by name)."""
    graph = model.graph
    consumers = _consumers(graph)
    initializers = {i.name: i for i in graph.initializer}
    prepended = []
    for name, init in list(initializers.items()):
        base = _float_name(name)
        if base is None or base not in floats or len(init.dims) != 2:
            continue
        kinds = {n.op_type for n in consumers.get(name, [])}
        if kinds == {"Gather"}:
            prepended += _table(graph, init, floats[base], consumers)
        elif kinds and kinds <= {"MatMulInteger", "Cast"}:
            prepended += _matmul_weight(graph, init, initializers[base + SCALE], floats[base])
        else:
            raise UserError(f"onnx w4a8 cannot store '{base}' (read by {', '.join(sorted(kinds))}); export with --quantize int8")
    for node in reversed(prepended):  # constants only: first in the graph keeps it sorted
        graph.node.insert(0, node)
    _drop_unread(graph)
    _set_opset(model)


def _drop_unread(graph: Any) -> None:
    """Remove the initializers no node reads any more (a table's one int8 scale and zero point)."""
    read = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    for init in [i for i in graph.initializer if i.name not in read]:
        graph.initializer.remove(init)


def _float_name(name: str) -> str | None:
    for suffix in (QUANTIZED, WEIGHT_ONLY):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None


def _consumers(graph: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            found.setdefault(name, []).append(node)
    return found


def _matmul_weight(graph: Any, init: Any, scale: Any, weight_kn: np.ndarray) -> list[Any]:
    """A [K, N] int8 MatMul weight (its scale per output column) rebuilt from codes along K per output column."""
    from onnx import numpy_helper

    codes_nodes, row_scale = _codes(graph, init.name, weight_kn.T, transpose=True)
    scale.CopyFrom(numpy_helper.from_array(row_scale.reshape(-1), scale.name))
    return codes_nodes


def _table(graph: Any, init: Any, table: np.ndarray, consumers: dict[str, list[Any]]) -> list[Any]:
    """A [rows, dim] int8 table rebuilt from codes along dim per row; each lookup's dequantization reads its rows'
    scales (`consumers`: the nodes reading each tensor, `_consumers`)."""
    from onnx import TensorProto, helper, numpy_helper

    codes_nodes, row_scale = _codes(graph, init.name, table, transpose=False)
    scales = f"{init.name}_row_scale"
    graph.initializer.append(numpy_helper.from_array(row_scale.astype(np.float32), scales))  # [rows, 1]
    for gather in consumers[init.name]:
        dequantize = _only_consumer(consumers, gather.output[0], "DequantizeLinear")
        out, at = dequantize.output[0], list(graph.node).index(dequantize)
        graph.node.remove(dequantize)
        prefix = gather.name or gather.output[0]
        graph.node.insert(at, helper.make_node("Mul", [f"{prefix}_as_float", f"{prefix}_row_scales"], [out], name=f"{prefix}_Scale"))
        graph.node.insert(at, helper.make_node("Cast", [gather.output[0]], [f"{prefix}_as_float"], name=f"{prefix}_Cast", to=TensorProto.FLOAT))
        graph.node.insert(at, helper.make_node("Gather", [scales, gather.input[1]], [f"{prefix}_row_scales"], name=f"{prefix}_RowScales"))
    return codes_nodes


def _only_consumer(consumers: dict[str, list[Any]], name: str, op_type: str) -> Any:
    users = consumers.get(name, [])
    if len(users) != 1 or users[0].op_type != op_type:
        raise UserError(f"onnx w4a8 expected one {op_type} after '{name}'; export with --quantize int8")
    return users[0]


def _codes(graph: Any, name: str, rows_k: np.ndarray, transpose: bool) -> tuple[list[Any], np.ndarray]:
    """Replace initializer `name` by nodes computing its int8 codes from 4-bit values and block multipliers of
    `rows_k` [rows, k] (blocks along k); `transpose`: the int8 tensor is [k, rows]. Returns (nodes, scale [rows, 1])."""
    import torch
    from onnx import TensorProto, helper, numpy_helper

    codes, multipliers, scale = (t.numpy() for t in two_level_int4_codes(torch.from_numpy(rows_k.astype(np.float32)), INT4_BLOCK))
    rows, k = codes.shape
    blocks = multipliers.shape[1]
    padded = np.zeros((rows, blocks * INT4_BLOCK), np.int32)
    padded[:, :k] = codes
    values = padded.reshape(rows, blocks, INT4_BLOCK) // multipliers[..., None]  # exact: codes are multiples
    graph.initializer.remove(next(i for i in graph.initializer if i.name == name))
    v, m = f"{name}_values4", f"{name}_multipliers4"
    graph.initializer.extend([_int4(v, values, TensorProto.INT4), _int4(m, multipliers[..., None], TensorProto.UINT4)])
    shape = f"{name}_codes_shape"
    graph.initializer.append(numpy_helper.from_array(np.array([rows, blocks * INT4_BLOCK], np.int64), shape))
    nodes = [  # int8 throughout (|codes| <= 63): the folding's intermediates are the int8 weight's size
        helper.make_node("Cast", [v], [f"{v}_i8"], to=TensorProto.INT8),
        helper.make_node("Cast", [m], [f"{m}_i8"], to=TensorProto.INT8),
        helper.make_node("Mul", [f"{v}_i8", f"{m}_i8"], [f"{name}_blocks"]),
        helper.make_node("Reshape", [f"{name}_blocks", shape], [f"{name}_padded"]),
    ]
    last = f"{name}_padded"
    if blocks * INT4_BLOCK != k:
        bounds = [f"{name}_slice_{p}" for p in ("starts", "ends", "axes")]
        graph.initializer.extend(numpy_helper.from_array(np.array([x], np.int64), b) for x, b in zip((0, k, 1), bounds))
        nodes.append(helper.make_node("Slice", [last, *bounds], [f"{name}_rows"]))
        last = f"{name}_rows"
    if transpose:
        nodes.append(helper.make_node("Transpose", [last], [f"{name}_kn"], perm=[1, 0]))
        last = f"{name}_kn"
    nodes[-1].output[0] = name
    for n, node in enumerate(nodes):
        node.name = f"{name}_unpack_{n}"
    return nodes, scale


def _int4(name: str, values: np.ndarray, data_type: int) -> Any:
    """An INT4 / UINT4 initializer of `values` (two to a byte, the first in the low nibble, as ONNX packs them)."""
    from onnx import helper

    flat = (values.reshape(-1).astype(np.int32) & 0x0F).astype(np.uint8)
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)
    return helper.make_tensor(name, data_type, list(values.shape), vals=packed.tobytes(), raw=True)


def _set_opset(model: Any) -> None:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = max(entry.version, OPSET)
    model.ir_version = max(model.ir_version, IR_VERSION)
