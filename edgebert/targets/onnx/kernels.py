"""The int8 kernel paths an ONNX file meets on other CPUs, emulated so that any machine can check them.

onnxruntime (MLAS) multiplies uint8 activations by int8 weights with different instructions per CPU:
- AVX-512 VNNI / AVX-VNNI (`vpdpbusd`), ARM64 (`sdot`/`udot`, or 16-bit `smull` + 32-bit accumulation) and
  U8U8 products everywhere accumulate exactly in 32 bits;
- AVX2 without VNNI (AMD Zen 1-3, Intel before Ice Lake) and AVX-512 without VNNI (Skylake-X) use `vpmaddubsw`:
  two adjacent u8 x s8 products are added into a **saturating int16** (255 * 127 * 2 = 64770 > 32767) before
  `vpmaddwd` widens them to int32. Large activations against large weights of the same sign are clipped.

`emulate_u8s8_saturation` rewrites a quantized graph so that every u8 x s8 product is computed the saturating
way with standard ONNX ops (pairs of K, int32 products, clip to int16, sum): the rewritten copy, run in
onnxruntime on any CPU, gives what a non-VNNI x86 CPU gives. The export's parity check runs it beside the
host's kernel, so a file that would drift on an AVX2 machine fails on a VNNI machine too. Zero points are
applied after the integer sum, as MLAS does (row and column sums), so only the raw u8 x s8 pairs saturate.

Covered: `MatMulInteger` (dynamic int8) and `DequantizeLinear -> MatMul <- DequantizeLinear` with a uint8
activation and an int8 constant weight (QDQ int8-static, which onnxruntime runs as QLinearMatMul). A weight computed
from constants (the `w4a8` recipe's 4-bit codes, which onnxruntime folds at load) is folded first (`folded`), so its
products are emulated as the kernels meet them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

INT16_MIN, INT16_MAX = -32768, 32767

HOST = "host"
SATURATING_U8S8 = "u8s8-saturating"
# What each kernel path name stands for, for the manifest and the messages.
KERNEL_PATHS = {
    HOST: "this machine's onnxruntime kernels",
    SATURATING_U8S8: "x86 without VNNI (AVX2, AVX-512 before VNNI): u8 x s8 pairs summed in saturating int16, emulated",
}


@dataclass(frozen=True)
class _Product:
    """One u8 x s8 integer product found in the graph."""

    node: Any  # the MatMulInteger or float MatMul node replaced
    activation: str  # uint8 tensor [..., M, K]
    activation_zero_point: str | None
    weight: np.ndarray  # int8 [K, N]
    weight_zero_point: np.ndarray  # int8, scalar or [N]
    scales: tuple[str, ...]  # (activation scale, weight scale) for QDQ: the float result; () keeps MatMulInteger's int32


def folded(model: Any) -> Any:
    """`model` with its constant subgraphs folded as onnxruntime folds them at load (its basic graph optimizations:
    standard ops only), when it stores 4-bit weights; else `model` itself."""
    import tempfile
    from pathlib import Path

    import onnx
    import onnxruntime as ort

    four_bit = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)
    if not any(i.data_type in four_bit for i in model.graph.initializer):
        return model
    with tempfile.TemporaryDirectory(prefix="edgebert-fold-") as scratch:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(Path(scratch) / "folded.onnx")
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return onnx.load(options.optimized_model_filepath)


def has_u8s8_products(model: Any) -> bool:
    """Whether any product in `model` multiplies uint8 activations by int8 weights (the path that can saturate)."""
    return bool(_find_products(model))


def widest_pair(model: Any) -> tuple[int, int]:
    """The least and greatest value any pair of adjacent u8 x s8 products in `model` can reach, over every uint8
    activation (0..255) and the weights as stored: ((0, 0) without products). When both lie within int16 no pair can
    saturate, so the non-VNNI kernels compute the same integers as the exact ones (the 7-bit int8 recipe: -32640 and
    32130), for every input, not only the texts a check runs."""
    low = high = 0
    for product in _find_products(model):
        weight = product.weight.astype(np.int64)
        even = weight.shape[0] - weight.shape[0] % 2
        positive, negative = np.maximum(weight[:even], 0), np.minimum(weight[:even], 0)
        if even:
            high = max(high, 255 * int((positive[0::2] + positive[1::2]).max()))
            low = min(low, 255 * int((negative[0::2] + negative[1::2]).min()))
    return low, high


def saturation_proof(model: Any) -> str | None:
    """Why the saturating u8 x s8 kernels compute what the host's do on `model` (its weights as the kernels meet
    them: `folded`), or None when some pair could leave int16 and the path must be run (`emulate_u8s8_saturation`)."""
    low, high = widest_pair(model)
    if low < INT16_MIN or high > INT16_MAX:
        return None
    return (f"no u8 x s8 pair can leave int16 (any uint8 activation: pairs span {low}..{high}, int16 {INT16_MIN}..{INT16_MAX}): "
            "its integer products are the exact ones the host computes")  # fmt: skip


def emulate_u8s8_saturation(model: Any) -> int:
    """Rewrite `model` (an onnx.ModelProto, opset >= 13, in place) so every u8 x s8 product saturates as on
    AVX2; return how many were rewritten."""
    from onnx import numpy_helper

    graph = model.graph
    products = _find_products(model)
    for index, product in enumerate(products):
        prefix = f"edgebert_sat{index}"
        nodes, inits = _saturating_product(product, prefix)
        position = list(graph.node).index(product.node)
        graph.node.remove(product.node)
        for offset, node in enumerate(nodes):
            graph.node.insert(position + offset, node)
        graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in inits.items())
    return len(products)


# Bytes one int32 pair-product tensor may take for a row of CHUNK_ROWS tokens: the pairs of K are summed a chunk at a
# time, so that a wide product (a masked-LM decoder's 30k-column vocabulary) does not hold [..., M, K/2, N] at once.
CHUNK_BYTES = 1 << 28
CHUNK_ROWS = 128


def pairs_per_chunk(n: int, pairs: int) -> int:
    """How many pairs of K one chunk of a product with `n` output columns takes."""
    return max(1, min(pairs, CHUNK_BYTES // (CHUNK_ROWS * max(n, 1) * 4)))


def _saturating_product(product: _Product, prefix: str) -> tuple[list[Any], dict[str, np.ndarray]]:
    """Nodes computing `product` with int16 saturation of each pair of K (the pairs summed a chunk at a time), and the
    constants they need."""
    from onnx import TensorProto, helper

    p = prefix
    weight = product.weight.astype(np.int32)
    k, n = weight.shape
    even_k = k - k % 2
    step = 2 * pairs_per_chunk(n, even_k // 2)
    inits: dict[str, np.ndarray] = {
        f"{p}_b_colsum": weight.sum(axis=0, dtype=np.int32),
        f"{p}_b_zp": product.weight_zero_point.astype(np.int32),
        f"{p}_k": np.array(k, np.int32),
        f"{p}_lo": np.array(INT16_MIN, np.int32),
        f"{p}_hi": np.array(INT16_MAX, np.int32),
        f"{p}_last_axis": np.array([-1], np.int64),
        f"{p}_pair_axis": np.array([-2], np.int64),
        f"{p}_two": np.array([2], np.int64),
    }
    a = f"{p}_a"
    nodes = [helper.make_node("Cast", [product.activation], [a], to=TensorProto.INT32)]
    partials = []
    for c, lo in enumerate(range(0, even_k, step)):
        hi, q = min(lo + step, even_k), f"{p}_c{c}"
        inits.update({
            f"{q}_b_even": weight[lo:hi:2][None], f"{q}_b_odd": weight[lo + 1 : hi : 2][None],  # [1, pairs, N]
            f"{q}_start": np.array([lo], np.int64), f"{q}_start_odd": np.array([lo + 1], np.int64), f"{q}_end": np.array([hi], np.int64),
        })  # fmt: skip
        ends = [f"{q}_end", f"{p}_last_axis", f"{p}_two"]
        nodes += [
            helper.make_node("Slice", [a, f"{q}_start", *ends], [f"{q}_a_even"]),
            helper.make_node("Slice", [a, f"{q}_start_odd", *ends], [f"{q}_a_odd"]),
            helper.make_node("Unsqueeze", [f"{q}_a_even", f"{p}_last_axis"], [f"{q}_a_even_col"]),  # [..., M, pairs, 1]
            helper.make_node("Unsqueeze", [f"{q}_a_odd", f"{p}_last_axis"], [f"{q}_a_odd_col"]),
            helper.make_node("Mul", [f"{q}_a_even_col", f"{q}_b_even"], [f"{q}_prod_even"]),
            helper.make_node("Mul", [f"{q}_a_odd_col", f"{q}_b_odd"], [f"{q}_prod_odd"]),
            helper.make_node("Add", [f"{q}_prod_even", f"{q}_prod_odd"], [f"{q}_pairs"]),
            helper.make_node("Max", [f"{q}_pairs", f"{p}_lo"], [f"{q}_pairs_lo"]),
            helper.make_node("Min", [f"{q}_pairs_lo", f"{p}_hi"], [f"{q}_pairs_sat"]),
            helper.make_node("ReduceSum", [f"{q}_pairs_sat", f"{p}_pair_axis"], [f"{q}_raw"], keepdims=0),
        ]
        partials.append(f"{q}_raw")
    raw = partials[0]
    for i, partial in enumerate(partials[1:]):  # onnx Sum takes no int32: a chain of Adds
        nodes.append(helper.make_node("Add", [raw, partial], [f"{p}_acc{i}"]))
        raw = f"{p}_acc{i}"
    if k % 2:  # the last element of an odd K has no partner (MLAS pads K with zeros): one product, never clipped
        inits[f"{p}_b_last"] = weight[k - 1 :]
        inits[f"{p}_ends"] = np.array([even_k], np.int64)
        inits[f"{p}_ends_all"] = np.array([k], np.int64)
        nodes += [
            helper.make_node("Slice", [a, f"{p}_ends", f"{p}_ends_all", f"{p}_last_axis"], [f"{p}_a_last"]),
            helper.make_node("Mul", [f"{p}_a_last", f"{p}_b_last"], [f"{p}_tail"]),
            helper.make_node("Add", [raw, f"{p}_tail"], [f"{p}_raw_all"]),
        ]
        raw = f"{p}_raw_all"
    return nodes + _zero_point_terms(product, p, a, raw), inits


def _zero_point_terms(product: _Product, p: str, a: str, raw: str) -> list[Any]:
    """int32 result = raw - a_zp * colsum(B) - b_zp * rowsum(A) + K * a_zp * b_zp; then scaled (QDQ) or not."""
    from onnx import TensorProto, helper

    out = product.node.output[0]
    int_out = f"{p}_int" if product.scales else out
    nodes = [
        helper.make_node("ReduceSum", [a, f"{p}_last_axis"], [f"{p}_rowsum"], keepdims=1),
        helper.make_node("Mul", [f"{p}_rowsum", f"{p}_b_zp"], [f"{p}_t_b"]),
    ]
    term = f"{p}_t_b"
    if product.activation_zero_point:
        nodes += [
            helper.make_node("Cast", [product.activation_zero_point], [f"{p}_a_zp"], to=TensorProto.INT32),
            helper.make_node("Mul", [f"{p}_a_zp", f"{p}_b_colsum"], [f"{p}_t_a"]),
            helper.make_node("Mul", [f"{p}_a_zp", f"{p}_b_zp"], [f"{p}_zz"]),
            helper.make_node("Mul", [f"{p}_zz", f"{p}_k"], [f"{p}_t_ab"]),
            helper.make_node("Sub", [f"{p}_t_b", f"{p}_t_ab"], [f"{p}_t_b_ab"]),
            helper.make_node("Add", [f"{p}_t_b_ab", f"{p}_t_a"], [f"{p}_terms"]),
        ]
        term = f"{p}_terms"
    nodes.append(helper.make_node("Sub", [raw, term], [int_out]))
    if product.scales:
        nodes += [
            helper.make_node("Mul", list(product.scales), [f"{p}_scale"]),
            helper.make_node("Cast", [int_out], [f"{p}_float"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{p}_float", f"{p}_scale"], [out]),
        ]
    return nodes


def _find_products(model: Any) -> list[_Product]:
    """Every MatMulInteger and QDQ MatMul whose activation is uint8 and whose weight is an int8 constant."""
    from onnx import numpy_helper

    graph = model.graph
    consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    found = []
    for node in graph.node:
        if node.op_type == "MatMulInteger":
            found += _matmul_integer(node, consts)
        elif node.op_type == "MatMul":
            found += _qdq_matmul(node, consts, producers)
    return found


def _matmul_integer(node: Any, consts: dict[str, np.ndarray]) -> list[_Product]:
    weight = consts.get(node.input[1])
    if weight is None or weight.dtype != np.int8 or weight.ndim != 2:
        return []
    a_zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
    b_zp = consts.get(node.input[3], np.zeros((), np.int8)) if len(node.input) > 3 and node.input[3] else np.zeros((), np.int8)
    return [_Product(node, node.input[0], a_zp, weight, b_zp, ())]


def _qdq_matmul(node: Any, consts: dict[str, np.ndarray], producers: dict[str, Any]) -> list[_Product]:
    """A float MatMul fed by DQ(uint8 activation) and DQ(int8 constant weight): onnxruntime's QLinearMatMul."""
    left, right = (producers.get(name) for name in node.input[:2])
    if not (left and right and left.op_type == right.op_type == "DequantizeLinear"):
        return []
    weight = consts.get(right.input[0])
    if weight is None or weight.dtype != np.int8 or weight.ndim != 2:
        return []
    quantize = producers.get(left.input[0])
    if quantize is None or quantize.op_type != "QuantizeLinear" or not _is_uint8(left.input[0], quantize, consts):
        return []
    zero_b = consts.get(right.input[2]) if len(right.input) > 2 else None
    zero_b = np.zeros((), np.int8) if zero_b is None else zero_b
    a_zp = left.input[2] if len(left.input) > 2 and left.input[2] else None
    return [_Product(node, left.input[0], a_zp, weight, zero_b, (left.input[1], right.input[1]))]


def _is_uint8(tensor: str, quantize: Any, consts: dict[str, np.ndarray]) -> bool:
    """A QuantizeLinear output is uint8 when its zero point is (no zero point also means uint8)."""
    if len(quantize.input) < 3 or not quantize.input[2]:
        return True
    zero = consts.get(quantize.input[2])
    return zero is not None and zero.dtype == np.uint8
