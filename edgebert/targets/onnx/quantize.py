"""ONNX quantization recipes on top of onnxruntime.quantization (and ORT's fp16 converter).

- ``int8``: dynamic, per-channel int8 weights on a 7-bit range (``reduce_range``: -64..63) for MatMul and the
  embedding Gather; uint8 activations quantized at run time. The FFN down-projections run in float, and the
  up-projections too when the guard texts need it (`edgebert.targets.base.INT8_FLOAT_ISLANDS`); those weights are
  stored as weight-only int8 when that keeps the model faithful on the guard texts (`RECIPE_MIN_COSINE`), else as
  float32.
- ``int4``: 4-bit weight blocks (onnxruntime's MatMulNBits and GatherBlockQuantized), float compute, with the
  float islands of ``int8`` (`_write_int4`, with what 4 bits cost on all-MiniLM-L6-v2).
- ``w4a8``: the ``int8`` recipe's graph, kernels and float islands, with every weight and table stored at 4 bits
  (two-level codes that onnxruntime folds into the int8 weights at load: `edgebert.targets.onnx.w4a8`), the islands'
  weights too: 4-bit bytes at int8 speed. Exact on the `onnx-w4a8` grid (`distill --weight-grid onnx-w4a8`).
- ``fp16``: float16 weights and compute, float32 inputs/outputs.
- ``int8-static``: static QDQ. Per-channel asymmetric uint8 weights (U8U8), per-tensor asymmetric uint8 activations with
  ranges calibrated on the caller's sentences (each at its natural length, as the dynamic-shape graph is used).
  Every MatMul (the attention-score ones too) and the embedding Gathers are quantized, except the FFN
  projections (`STATIC_FLOAT_ROLES`). Range estimator: MinMax averaged over the calibration sentences (ORT
  ``CalibMovingAverage``; with all sentences collected in one pass this is the mean of the per-sentence minima
  and maxima). Measured on all-MiniLM-L6-v2 (seq 128, parity sentences, min cosine): everything static, global
  MinMax: 0.848; FFN down-projections float: 0.980; FFN down- and up-projections float: 0.991-0.993 with global
  MinMax, 0.9935-0.9945 with averaged MinMax (two calibration samples of 100 and 200 passages). Percentile (99.999)
  and Entropy ranges (sentences padded to one length, which histograms need) were no better with the FFN
  down-projections float: 0.975 and 0.980. The LayerNorm outputs and the post-GELU activations carry a few
  large outlier channels that a clipped per-tensor range destroys and a full one leaves too coarse for the rest
  (Bondarenko et al. 2021).

Why 7-bit weights (int8) and U8U8 (int8-static): onnxruntime multiplies uint8 activations by int8 weights with
`vpmaddubsw` on x86 CPUs without VNNI, which adds two products into a saturating int16 (255 * 127 * 2 > 32767);
VNNI and ARM accumulate exactly. A recipe must hold on every CPU the file meets, so the export checks parity on
the host's kernels and on that saturating path emulated (edgebert/targets/onnx/kernels.py). all-MiniLM-L6-v2,
parity sentences, min cosine on host (Intel Xeon, AVX-512 VNNI) / emulated non-VNNI x86, ORT latency at seq 128,
batch 1, one thread on the same Xeon (fp32: 25.0-25.5 ms):
- dynamic, s8 weights full range, FFN down float (the previous recipe): 0.9908 / 0.9785 (0.978451 was measured
  on a real AMD EPYC Zen 3: the emulation reproduces it to six digits), 15.8 ms;
- dynamic, s8 weights 7-bit (this recipe): 0.9926 / 0.9926 (no pair can leave int16: 255 * 64 * 2 = 32640), 15.6 ms;
- dynamic, U8U8, FFN down float: 0.9931 / 0.9931 but 26.3 ms: MLAS's U8U8 kernels do not use VNNI;
- dynamic, everything int8 (FFN down too): s8 0.9889 / 0.9703, U8U8 0.9861;
- static QDQ, s8 weights (the previous recipe): 0.9946 / 0.9903, 23.7 ms; s8 7-bit: 0.9891 (activation and
  weight rounding add up); U8U8 (this recipe): 0.9940 / no u8 x s8 product left to saturate, 28.8 ms.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from edgebert import cost
from edgebert.errors import UserError
from edgebert.families import Family
from edgebert.targets.base import INT4_FLOAT_ISLANDS, INT8_FLOAT_ISLANDS, RECIPE_MIN_COSINE, guard_min_cosine, guard_record
from edgebert.weight_grids import INT4_BLOCK  # input channels per scale: the most faithful of 32, 64 and 128 (`_write_int4`)

STATIC = "int8-static"
INT4 = "int4"
W4A8 = "w4a8"
INT4_QUANTIZER_LOGGER = "onnxruntime.quantization.matmul_nbits_quantizer"
# 7-bit int8 weights for the dynamic recipe: no u8 x s8 pair can saturate int16 on x86 without VNNI (module doc).
DYNAMIC_REDUCE_RANGE = True
# Layer roles (edgebert.families.LAYER_ROLES) whose MatMuls stay float under int8-static (measured, see the module doc).
STATIC_FLOAT_ROLES = ("ffn_input", "ffn_output")


def quantize_onnx(
    src: Path,
    dst: Path,
    recipe: str,
    family: Family,
    calibration: Iterable[dict[str, np.ndarray]] | None = None,
    guard: list[dict[str, np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Write a quantized copy of `src` to `dst`; return what the recipe did (for the export manifest).

    'int8' dynamic per-channel, 'int4' (`_write_int4`), 'w4a8' (`_write_w4a8`), 'fp16', or 'int8-static' (QDQ), which needs `calibration`: model feeds
    (input name -> int64 [1, T] array), one per calibration sentence. `guard`: model feeds, one per guard text
    (`onnx.exporter.guard_feeds`), on which 'int8' chooses its float islands and their weights' storage.
    """
    if recipe in ("int8", W4A8, STATIC):
        shared = fold_shared_weights(src)
        if recipe == STATIC:
            info = _quantize_static(src, dst, family, list(calibration or ()))
        else:
            info = _quantize_dynamic(src, dst, family, guard) if recipe == "int8" else _quantize_w4a8(src, dst, family, guard)
        left = float_weight_matmuls(dst, info["excluded_nodes"])
        if left:
            raise UserError(
                f"onnx {recipe} left {len(left)} weight MatMul(s) in float (e.g. {left[0]}), so the file would not be "
                "what the recipe says; export with --quantize none or fp16"
            )
        if shared:
            info["shared_weights"] = {"identity_nodes_folded": shared, "note": "every pass reads the one quantized copy"}
        return info
    if recipe == INT4:
        fold_shared_weights(src)
        info = {
            "recipe": INT4,
            "weights": f"4-bit symmetric, blocks of {INT4_BLOCK} input channels (MatMulNBits; tables GatherBlockQuantized)",
            "compute": "float32 (weights dequantized in the kernel)",
        }
        return _with_float_islands(src, dst, family, guard, _write_int4, info, INT4_FLOAT_ISLANDS)
    if recipe == "fp16":
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16

        model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
        onnx.save(model, str(dst))
        return {"recipe": recipe, "weights": "float16", "compute": "float16"}
    raise ValueError(f"unknown ONNX quantization recipe '{recipe}'")


def _quantize_dynamic(src: Path, dst: Path, family: Family, guard: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
    info = {"recipe": "int8", "weights": "int8 on a 7-bit range (-64..63), per-channel", "activations": "uint8, dynamic"}
    return _with_float_islands(src, dst, family, guard, _write_dynamic_int8, info, INT8_FLOAT_ISLANDS)


def _quantize_w4a8(src: Path, dst: Path, family: Family, guard: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
    info = {"recipe": W4A8, "weights": f"4-bit two-level codes (values -7..7, a multiplier 1..9 per {INT4_BLOCK} inputs, "
            "a float scale per output channel), folded at load into int8 weights (-63..63)",
            "activations": "uint8, dynamic", "compute": "the int8 recipe's integer kernels (float islands: float)"}  # fmt: skip
    return _with_float_islands(src, dst, family, guard, _write_w4a8, info, INT8_FLOAT_ISLANDS, store_islands=False)


def _write_dynamic_int8(src: Path, dst: Path, excluded: list[str]) -> None:
    """`src` with every weight MatMul but `excluded` and the embedding Gathers dynamically quantized, saved to `dst`."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel weights: per-tensor int8 loses ~5 % cosine on MiniLM (STACK.md). Gather is included so the
    # embedding table, the largest tensor of a small BERT, is stored as int8 too.
    with _quiet_ort_logging():
        quantize_dynamic(
            str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True, reduce_range=DYNAMIC_REDUCE_RANGE,
            op_types_to_quantize=["MatMul", "Gather"], nodes_to_exclude=excluded,
        )  # fmt: skip


def _write_int4(src: Path, dst: Path, excluded: list[str]) -> None:
    """`src` with every weight MatMul but `excluded` and every embedding Gather at 4 bits, saved to `dst`.

    onnxruntime's `MatMulNBitsQuantizer`: every weight MatMul becomes com.microsoft.MatMulNBits and the embedding
    tables GatherBlockQuantized, symmetric 4-bit weights in blocks of `INT4_BLOCK` input channels, one float scale a
    block, dequantized inside the kernel and multiplied in float (`accuracy_level` unset: no activation quantization,
    so no CPU-dependent integer kernel and no x86 saturation path to check). Both are onnxruntime contrib ops (CPU,
    wasm and the React Native build have them; other ONNX runtimes may not), and 4-bit tensors move the file to
    opset 21 (the quantizer says so at WARNING; the export's parity check runs the result).

    Post-training 4-bit rounding is far coarser than int8 (16 levels a block). Measured on all-MiniLM-L6-v2 over the
    255 wide parity texts against its fp32 ONNX (min cosine; AMD EPYC with avx_vnni, onnxruntime 1.32):
    - every MatMul and the tables, blocks of 32 / 64 / 128: 0.859 / 0.832 / 0.782 (14.3 / 12.9 / 12.2 MB);
    - MatMuls only, blocks of 32: symmetric 0.864, asymmetric 0.882, blocks of 16 0.897; the tables alone: 0.959;
    - the FFN projections float, the rest 4-bit: 0.948; `accuracy_level` 4 (int8 activations) changed none of these
      by more than 0.01;
    - HQQ instead of round-to-nearest (onnxruntime's `HQQWeightOnlyQuantConfig`, asymmetric, blocks of 32): 0.906.
    So the teacher has no 4-bit recipe at the 0.99 gate; the export refuses it and names the recipes that hold.
    """
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(src)), bits=4, block_size=INT4_BLOCK, is_symmetric=True, nodes_to_exclude=excluded,
        op_types_to_quantize=("MatMul", "Gather"), quant_axes=(("MatMul", 0), ("Gather", 1)),
    )  # fmt: skip
    # It logs a line per node at INFO; all-zero blocks get scale 0 and quantize to 0.
    with _quiet_ort_logging(INT4_QUANTIZER_LOGGER), np.errstate(invalid="ignore", divide="ignore"):
        quantizer.process()
    quantizer.model.save_model_to_file(str(dst), use_external_data_format=False)


def _write_w4a8(src: Path, dst: Path, excluded: list[str]) -> None:
    """The int8 recipe's file (`excluded`: float islands, their weights as int8 codes) with every int8 weight and
    table stored as 4-bit two-level codes of its float original in `src` (`edgebert.targets.onnx.w4a8`)."""
    import onnx
    from onnx import numpy_helper

    from edgebert.targets.onnx.w4a8 import store_at_four_bits

    _write_dynamic_int8(src, dst, excluded)
    model = onnx.load(str(dst))
    weight_only_int8(model, excluded)
    floats = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(src)).graph.initializer}
    store_at_four_bits(model, floats)
    onnx.save(model, str(dst))


def _with_float_islands(
    src: Path, dst: Path, family: Family, guard: list[dict[str, np.ndarray]] | None,
    write: Callable[[Path, Path, list[str]], None], info: dict[str, Any], ladder: tuple[tuple[str, ...], ...],
    store_islands: bool = True,
) -> dict[str, Any]:
    """`write(src, dst, excluded)` with the float islands of each rung of `ladder` in turn, until the guard texts hold
    `RECIPE_MIN_COSINE` on every kernel path (the last is kept anyway: the parity check decides); `info` plus what was
    chosen and how the islands' weights are stored (`store_islands` False: `write` stored them)."""
    with cost.phase("guard reference (fp32 graph)"):
        reference = _guard_reference(src, guard)
    for rung, roles in enumerate(ladder):
        excluded = module_matmuls(src, family, [family.layer_module(role) for role in roles])
        with cost.phase(f"rung {rung} ({'+'.join(roles) or 'no islands'}): quantize"):
            write(src, dst, excluded)
        with cost.phase(f"rung {rung} ({'+'.join(roles) or 'no islands'}): guard"):
            measured = _guard_min_cosine(dst, guard, reference, RECIPE_MIN_COSINE if rung < len(ladder) - 1 else None)
        if measured is None or measured >= RECIPE_MIN_COSINE:
            break
    info = {**info, "float_islands": list(roles), "excluded_nodes": excluded}
    if measured is not None:
        info["guard"] = guard_record(guard, measured)
    if store_islands:
        with cost.phase("island weights: weight-only int8 + guard"):
            info["float_island_weights"] = _weight_only_if_faithful(dst, excluded, guard, reference)
    elif excluded:
        info["float_island_weights"] = {"storage": "as the other weights, dequantized to float32 at load (Cast + Mul -> float MatMul)"}
    return info


def _guard_reference(src: Path, guard: list[dict[str, np.ndarray]] | None) -> list[dict[str, np.ndarray]] | None:
    """The fp32 graph's outputs on each guard feed (None without guard feeds)."""
    from edgebert.targets.onnx.runner import OnnxRunner

    if not guard:
        return None
    runner = OnnxRunner(src)
    return [runner.run(feed) for feed in guard]


def _guard_min_cosine(
    path: Path, guard: list[dict[str, np.ndarray]] | None, reference: list[dict[str, np.ndarray]] | None, stop_below: float | None = None
) -> float | None:
    """The worst cosine to the fp32 graph over the guard feeds and every kernel path `path` can meet (None: no guard);
    `stop_below`: only whether it is below that is wanted (`base.guard_min_cosine`)."""
    from edgebert.targets.base import runnable
    from edgebert.targets.onnx.runner import onnx_kernel_paths

    if not guard or reference is None:
        return None
    worst = 1.0
    for kernel in runnable(onnx_kernel_paths(path)).values():
        if stop_below is None or worst >= stop_below:
            worst = min(worst, guard_min_cosine(kernel.runner, guard, reference, stop_below))
        kernel.runner.close()
    return worst


def _weight_only_if_faithful(
    dst: Path, nodes: list[str], guard: list[dict[str, np.ndarray]] | None, reference: list[dict[str, np.ndarray]] | None
) -> dict[str, Any]:
    """Store the float islands' weights (`nodes`) in `dst` as weight-only int8 if the guard allows it (a third
    smaller file on the 3-layer students); what was decided and why."""
    import onnx

    if not nodes:
        return {"storage": "none to store"}
    if not guard:
        return {"storage": "float32", "reason": "no guard texts to check weight-only int8 on"}
    model = onnx.load(str(dst))
    stored = weight_only_int8(model, nodes)
    candidate = dst.with_name(dst.stem + ".weight-only" + dst.suffix)
    onnx.save(model, str(candidate))
    try:
        cosine = _guard_min_cosine(candidate, guard, reference)
        measured = {"guard_texts": len(guard), "guard_min_cosine": round(float(cosine), 6), "required": RECIPE_MIN_COSINE}
        if cosine < RECIPE_MIN_COSINE:
            return {"storage": "float32", "reason": "weight-only int8 fell below the required cosine", **measured}
        candidate.replace(dst)
        return {"storage": "int8 weight-only, per output channel (Cast + Mul -> float MatMul)", "nodes": stored, **measured}
    finally:
        candidate.unlink(missing_ok=True)


def weight_only_int8(model: Any, node_names: Iterable[str]) -> list[str]:
    """Store the constant weight (input B) of each named float MatMul as int8 with one scale per output column.

    The initializer W [in, out] becomes W_q = round(W / s) (int8, symmetric, s_j = max_i |W_ij| / 127) followed by
    Cast(float) and Mul(s) feeding the MatMul: 4x smaller on disk, float compute. Returns the nodes changed (a
    MatMul whose B is not a float32 initializer used only by named MatMuls is left alone; one used by several, a
    shared layer's passes, is quantized once and feeds them all).

    Standard ONNX ops on purpose: onnxruntime's own weight-only path (`MatMulNBitsQuantizer`, bits=8) writes the
    contrib op com.microsoft.MatMulNBits, which other ONNX runtimes lack. On all-MiniLM-L6-v2 the two were alike
    (parity min cosine 0.989 here; 0.988 / 0.991 with MatMulNBits blocks of 32 / 128), so portability decided.
    Cast + Mul rather than DequantizeLinear(axis=1): onnxruntime (1.31) fuses DequantizeLinear -> MatMul into that
    MatMulNBits kernel at load, which quantizes the activations to int8 (the outliers this projection keeps in float;
    student embeddings moved by up to 5e-3) and ran ~2x slower than the float MatMul (Intel Xeon, one thread:
    0.24 vs 0.12 ms for a [128, 230] x [230, 384] product); runtimes fold a Cast + Mul of constants into the float
    weight at load, so the product runs as written.
    """
    from onnx import TensorProto, helper, numpy_helper

    wanted = set(node_names)
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    users: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, set()).add(node.name if node.op_type == "MatMul" and node.name in wanted else "")
    changed = []
    scale_nodes = []  # Cast + Mul per weight, prepended to the graph at the end
    done: dict[str, str] = {}  # a weight shared by several wanted MatMuls (a shared layer's passes): quantized once
    for node in graph.node:
        if node.op_type != "MatMul" or node.name not in wanted or len(node.input) != 2:
            continue
        if node.input[1] in done:
            node.input[1] = done[node.input[1]]
            changed.append(node.name)
            continue
        init = initializers.get(node.input[1])
        if init is None or init.data_type != TensorProto.FLOAT or len(init.dims) != 2 or "" in users.get(init.name, {""}):
            continue
        weight = numpy_helper.to_array(init).astype(np.float32)
        scale = np.abs(weight).max(axis=0) / 127.0
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        quantized = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
        base = init.name
        graph.initializer.remove(init)
        graph.initializer.extend([numpy_helper.from_array(quantized, f"{base}_int8"), numpy_helper.from_array(scale, f"{base}_scale")])
        dequantized = f"{base}_dequantized"
        scale_nodes += [
            helper.make_node("Cast", [f"{base}_int8"], [f"{base}_as_float"], name=f"{node.name}_weight_Cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{base}_as_float", f"{base}_scale"], [dequantized], name=f"{node.name}_weight_Scale"),
        ]
        done[base] = dequantized
        node.input[1] = dequantized
        changed.append(node.name)
    for scale_node in reversed(scale_nodes):  # initializer-only inputs: prepending keeps the graph topologically sorted
        graph.node.insert(0, scale_node)
    return changed


def _quantize_static(src: Path, dst: Path, family: Family, feeds: list[dict[str, np.ndarray]]) -> dict[str, Any]:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    if not feeds:
        raise ValueError("int8-static needs calibration feeds")
    modules = [family.layer_module(role) for role in STATIC_FLOAT_ROLES]
    excluded = module_matmuls(src, family, modules)
    with _quiet_ort_logging():
        quantize_static(
            str(src),
            str(dst),
            calibration_reader(feeds),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QUInt8,  # U8U8: exact 32-bit products on every CPU (see the module doc)
            op_types_to_quantize=["MatMul", "Gather"],
            nodes_to_exclude=excluded,
            calibrate_method=CalibrationMethod.MinMax,
            extra_options={"CalibMovingAverage": True},
        )
    return {
        "recipe": STATIC,
        "format": "QDQ",
        "weights": "uint8, per-channel, asymmetric",
        "activations": "uint8, per-tensor, asymmetric, static",
        "ops_quantized": ["MatMul", "Gather"],
        "calibration_method": "MinMax, averaged over calibration sentences (onnxruntime CalibMovingAverage)",
        "float_modules": {f"{role}_module": family.layer_module(role) for role in STATIC_FLOAT_ROLES},
        "excluded_nodes": excluded,
    }


def calibration_reader(feeds: list[dict[str, np.ndarray]]) -> Any:
    """An onnxruntime CalibrationDataReader over `feeds` (one model input dict per calibration sentence): what the
    `int8-static` recipe hands `onnxruntime.quantization.quantize_static`, for other static recipes to be built the
    same way (benchmarks/experiments/int8_recipes.py)."""
    from onnxruntime.quantization import CalibrationDataReader

    class FeedReader(CalibrationDataReader):
        """Hands out the feeds once, in order; `rewind` starts over."""

        def __init__(self) -> None:
            self.position = 0

        def get_next(self) -> dict[str, np.ndarray] | None:
            if self.position >= len(feeds):
                return None
            self.position += 1
            return feeds[self.position - 1]

        def rewind(self) -> None:
            self.position = 0

    return FeedReader()


@contextmanager
def _quiet_ort_logging(name: str = "") -> Iterator[None]:
    """Errors only from the logger `name` (the root logger by default) while the block runs.

    onnxruntime.quantization logs a 'please pre-process' hint on the root logger: not for edgebert users. The
    pre-processing it means (`quant_pre_process`) does not help here: its symbolic shape inference fails on this
    graph, and without it (ORT graph optimisation only) the teacher's min cosine was the same (0.9945).
    """
    logger = logging.getLogger(name or None)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def fold_shared_weights(path: Path) -> int:
    """Rewrite `path` so that nodes read shared initializers directly; returns how many Identity nodes went.

    torch.onnx exports a module run several times (ALBERT's one shared layer) with the weights once and each later
    pass reading them through an Identity node. onnxruntime's quantizer only quantizes a MatMul whose weight is an
    initializer, so without this only the first pass would be int8 and the float weights would stay in the file."""
    import onnx

    model = onnx.load(str(path))
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    outputs = {o.name for o in graph.output}
    alias = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity" and n.input[0] in initializers and n.output[0] not in outputs}
    if not alias:
        return 0
    kept = [n for n in graph.node if not (n.op_type == "Identity" and n.output[0] in alias)]
    for node in kept:
        for k, name in enumerate(node.input):
            if name in alias:
                node.input[k] = alias[name]
    del graph.node[:]
    graph.node.extend(kept)
    onnx.save(model, str(path))
    return len(alias)


def float_weight_matmuls(path: Path, excluded: Iterable[str]) -> list[str]:
    """MatMul nodes left in float that multiply by a weight (a float initializer, or one dequantized or aliased),
    other than `excluded`: after int8 quantization there must be none."""
    import onnx
    from onnx import TensorProto

    graph = onnx.load(str(path), load_external_data=False).graph
    floats = {i.name for i in graph.initializer if i.data_type == TensorProto.FLOAT and len(i.dims) == 2}
    aliases = {n.output[0] for n in graph.node if n.op_type == "Identity" and n.input[0] in floats}
    skip = set(excluded)
    return [n.name for n in graph.node if n.op_type == "MatMul" and n.name not in skip and len(n.input) == 2 and n.input[1] in floats | aliases]


def ffn_down_projections(path: Path, family: Family) -> list[str]:
    """Names of the MatMul nodes of each layer's FFN output projection (torch.onnx names nodes by module path)."""
    return module_matmuls(path, family, [family.layer_module("ffn_output")])


def module_matmuls(path: Path, family: Family, modules: list[str]) -> list[str]:
    """Names of the MatMul nodes inside any of `modules` (module paths within one layer).

    torch.onnx names nodes by module path with "/" separators (`/encoder/encoder/layer.0/output/dense/MatMul`).
    The attention output projection is never selected: BERT's FFN "output.dense" is a suffix of its path. A module
    called again (a shared ALBERT layer's later passes) gets a "_<k>" suffix on its last name, matched too.
    """
    import onnx

    attention = _module_pattern(family.layer_module("attention_output"))
    patterns = [_module_pattern(m) for m in modules]
    graph = onnx.load(str(path), load_external_data=False).graph
    return [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and any(p.search(n.name) for p in patterns) and not attention.search(n.name)
    ]


def _module_pattern(module: str) -> re.Pattern[str]:
    """Node-name pattern of a module path: "/a/b/" or, for a later call of a shared module, "/a/b_<k>/"."""
    return re.compile("/" + re.escape(module.replace(".", "/")) + r"(_\d+)?/")
