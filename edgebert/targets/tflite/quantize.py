"""TFLite quantization recipes, applied to a float32 .tflite flatbuffer with ai-edge-quantizer.

All recipes are post-conversion rewrites of the flatbuffer:

- ``int8``: dynamic-range quantization (``dynamic_wi8_afp32``): channel-wise symmetric int8 weights for
  FULLY_CONNECTED / BATCH_MATMUL / CONV and the EMBEDDING_LOOKUP tables (the word-embedding table is
  the largest tensor of a small BERT), except the float islands chosen per model (`quantize_tflite`'s
  `float_modules`, weight-only int8, or float16 where int8 brings the drift back;
  `edgebert.targets.base.INT8_FLOAT_ISLANDS`), float32 activations quantized on the fly by the kernels, per row and
  asymmetrically (`asymmetric_inputs`): XNNPACK always quantizes them so, LiteRT's built-in kernels only when
  the op says so, and symmetric per-row inputs cost all-MiniLM-L6-v2 parity 0.9955 -> 0.9884 on the built-in
  kernels (XNNPACK unchanged at 0.9955; both kernel paths are checked at export).
- ``int4``: ``dynamic_wi4b32_afp32``: symmetric 4-bit weights in blocks of 32 along the input axis (bfloat16
  scales) for FULLY_CONNECTED and the EMBEDDING_LOOKUP tables, inputs quantized on the fly as in ``int8``, with the
  float islands of ``int8``; a weight whose input axis 32 does not divide (a pruned FFN's 507) has no blockwise form
  and is stored int8 per channel (`unblockable_ops`). `edgebert.weight_grids.litert_blockwise_int4` is this
  rounding in torch.
- ``w4a8``: ``dynamic_wi4_afp32``: symmetric 4-bit weights with one float32 scale a row (channelwise) for
  FULLY_CONNECTED and the EMBEDDING_LOOKUP tables, inputs quantized on the fly as in ``int8``. XNNPACK multiplies them
  with its per-channel 4-bit kernels (qd8-f32-qc4w), as fast as ``int8``'s on the `small` student where ``int4``'s
  blocks are 1.2x slower (AMD EPYC). A weight whose input axis 32 does not divide is stored int8 per channel, as in
  ``int4`` (XNNPACK leaves a 4-bit FULLY_CONNECTED of 507 inputs to the built-in kernels: 3x slower).
  `edgebert.weight_grids.litert_channelwise_int4` is this rounding in torch (the `tflite-w4a8` grid).
- ``fp16``: litert-torch's ``full_fp16_recipe`` (float casting of the same weights to float16, dequantized
  to float32 in the graph; compute stays float32).
- ``int8-static``: static range quantization (ai-edge-quantizer ``static_wi8_ai8`` policy): channel-wise
  symmetric int8 weights and per-tensor asymmetric int8 activations whose ranges are calibrated on the
  caller's sentences (min/max), for every supported op except the float islands of `static_float_rules`.
  Embedding tables are int8 as in ``int8``. Measured on all-MiniLM-L6-v2 (seq 128, parity sentences, min cosine):
  ``static_wi8_ai8`` on everything but the float32 outputs: 0.44 (``static_wi8_ai16``: 0.44), because the
  decomposed LayerNorm's variance (up to ~5e4), the residual sums and the finfo.min attention mask do not fit
  one integer range; with those, the masked softmax and the pooling head float: 0.914 (a16: 0.998, but the
  16x8 kernels ran ~45x slower than the ``int8`` recipe on the CPU, 917 vs 20 ms); with the FFN projections
  float as well (this recipe): 0.992-0.994 over two calibration samples of 100 and 200 passages. The scopes
  are named after litert-torch's op scopes (module paths); the TensorFlow fallback converter names ops
  differently, so on that path parity decides.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgebert.families import Family
from edgebert.targets.tflite.runner import _set_env
from edgebert.weight_grids import INT4_BLOCK  # input channels per scale of the int4 recipe (dynamic_wi4b32_afp32)

STATIC = "int8-static"
INT4 = "int4"
W4A8 = "w4a8"
FOUR_BIT = (INT4, W4A8)
RECIPES = ("int8", INT4, W4A8, "fp16", STATIC)
# The dynamic-range recipes (inputs quantized on the fly): {edgebert name: (ai-edge-quantizer recipe, what the
# manifest says of it)}. ALL_SUPPORTED under these policies includes EMBEDDING_LOOKUP, so the embedding tables are
# stored at the recipe's width too (checked by `weight_dtypes` in the tests).
DYNAMIC_RECIPES = {
    "int8": ("dynamic_wi8_afp32", "ai-edge-quantizer dynamic_wi8_afp32, inputs quantized per row with a zero point"),
    INT4: ("dynamic_wi4b32_afp32", (f"ai-edge-quantizer dynamic_wi4b32_afp32 (4-bit weights in blocks of {INT4_BLOCK}), "
                                    "inputs quantized per row with a zero point")),
    W4A8: ("dynamic_wi4_afp32", ("ai-edge-quantizer dynamic_wi4_afp32 (4-bit weights, one scale a row: XNNPACK's "
                                 "per-channel 4-bit kernels), inputs quantized per row with a zero point")),
}  # fmt: skip
LAYER_NORM_OPS = ("MEAN", "SQUARED_DIFFERENCE", "RSQRT", "ADD", "SUB", "MUL", "RESHAPE")
# (ai_edge_quantizer's op names; its REDUCE_MAX has none: max pooling runs on int8 activations under int8-static)
HEAD_OPS = ("RESHAPE", "MUL", "SUM", "MAXIMUM", "DIV", "SQRT", "SUB", "ADD", "CONCATENATION", "GATHER", "GATHER_ND",
            "FULLY_CONNECTED", "TANH", "RELU", "LOGISTIC", "GELU", "RSQRT", "SOFTMAX", "MEAN", "SQUARED_DIFFERENCE",
            "STRIDED_SLICE", "BATCH_MATMUL")
FFN_ROLES = ("ffn_input", "ffn_output")  # layer roles (edgebert.families.LAYER_ROLES) of the FFN projections
# Scopes of ops that belong to edgebert's own wrappers rather than to a transformer module: the base model
# (attribute `encoder` of edgebert.pooling.SentenceEmbedder: the attention-mask arithmetic) and the
# SentenceEmbedder itself (attribute `embedder` of edgebert.targets.tflite.exporter's int32 wrapper: pooling, the
# sentence-transformers Dense layers (attribute `dense`), L2 norm).
WRAPPER_SCOPES = r"_(?:encoder|embedder);|_embedder/[^/;]*Sequential_dense/"


def task_head_scopes(family: Family) -> str:
    """Regex for the ops of a task model (edgebert.pooling.TaskModel, attribute `model` of the embedder) outside its
    transformer layers and embeddings: the base model's own ops (attention-mask construction), its pooler and the
    task head (classifier, MLM transform and decoder). Under int8-static they stay float like the sentence stack."""
    inner = "|".join(re.escape(p) for p in (family.layers_path.split(".")[0], family.embeddings_prefix.rstrip(".")))
    return rf"_embedder/[^/;]*_model(?:;|/(?![^;]*_(?:{inner})[/;]))"


@dataclass(frozen=True)
class FloatRule:
    """Ops of the types `ops` whose scope matches `regex` stay float under int8-static, because of `reason`."""

    regex: str
    ops: tuple[str, ...]
    reason: str


def quantization_recipe(recipe: str) -> Any:
    """The ai-edge-quantizer recipe (a list of op configs) for a weight-only edgebert quantization name."""
    _set_env()
    if recipe in DYNAMIC_RECIPES:
        from ai_edge_quantizer import recipe as aeq_recipe

        return getattr(aeq_recipe, DYNAMIC_RECIPES[recipe][0])()
    if recipe == "fp16":
        from litert_torch.generative.quantize import quant_recipes
        from litert_torch.quantize import translate_recipe

        return translate_recipe.translate_to_ai_edge_recipe(quant_recipes.full_fp16_recipe().generative_recipe)
    if recipe == STATIC:
        raise ValueError("int8-static needs calibration: use quantize_tflite_static")
    raise ValueError(f"unknown TFLite quantization recipe '{recipe}'; expected one of {RECIPES}")


ISLAND_WEIGHTS = {"int8": "int8 weight-only (dequantized at load, float compute)",
                  "float16": "float16 (dequantized at load, float compute)"}  # fmt: skip


def quantize_tflite(model: bytes, recipe: str, float_modules: tuple[str, ...] = (), island_weights: str = "int8") -> bytes:
    """A quantized copy of the float32 TFLite flatbuffer `model` under `recipe` ('int8', 'int4', 'w4a8' or 'fp16').
    `float_modules` (module paths inside a layer; int8 and the 4-bit recipes): their FULLY_CONNECTED ops compute in
    float on weights dequantized at load (ai-edge-quantizer weight-only), so their activations are not quantized;
    `island_weights` (`ISLAND_WEIGHTS`): how those weights are stored."""
    _set_env()
    from ai_edge_quantizer import qtyping, quantizer
    from ai_edge_quantizer.algorithm_manager import AlgorithmName

    qt = quantizer.Quantizer(bytearray(model), quantization_recipe(recipe))
    if recipe in FOUR_BIT:
        for op_name, scope in unblockable_ops(model, INT4_BLOCK):  # no 4-bit form or kernel: int8 per channel, as `int8`
            qt.add_dynamic_config(re.escape(scope), getattr(qtyping.TFLOperationName, op_name), 8)
    bits, algorithm = (16, AlgorithmName.FLOAT_CASTING) if island_weights == "float16" else (8, AlgorithmName.MIN_MAX_UNIFORM_QUANT)
    for module in float_modules:
        qt.add_weight_only_config(module_scope(module, True), qtyping.TFLOperationName.FULLY_CONNECTED, bits, algorithm_key=algorithm)
    result = qt.quantize(enable_progress_bar=False, enable_progress_report=False)
    quantized = bytes(result.quantized_model)
    return asymmetric_inputs(quantized)[0] if recipe in DYNAMIC_RECIPES else quantized


BLOCKWISE_OPS = {"FULLY_CONNECTED": 1, "EMBEDDING_LOOKUP": 1}  # op -> its weight's input index (blocks on axis 1)


def unblockable_ops(model: bytes, block: int) -> list[tuple[str, str]]:
    """(op name, ai-edge-quantizer op scope) of the ops of `BLOCKWISE_OPS` whose weight's axis 1 `block` does not
    divide (a pruned FFN's 507 inputs): the quantizer has no blockwise form for them and refuses the whole model."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils
    from ai_edge_quantizer.utils.tfl_flatbuffer_utils import get_op_scope

    tree = flatbuffer_utils.read_model_from_bytearray(bytearray(model))
    codes = {getattr(schema.BuiltinOperator, name): name for name in BLOCKWISE_OPS}
    found = []
    for subgraph in tree.subgraphs:
        for op in subgraph.operators:
            code = tree.operatorCodes[op.opcodeIndex]
            name = codes.get(max(code.builtinCode, code.deprecatedBuiltinCode))
            if name is None:
                continue
            weight = subgraph.tensors[op.inputs[BLOCKWISE_OPS[name]]]
            if len(weight.shape) == 2 and weight.shape[1] % block:
                found.append((name, get_op_scope(op, subgraph.tensors)))
    return found


# Hybrid ops (float input, int8 weights) whose options carry `asymmetricQuantizeInputs`.
HYBRID_OPS = ("FULLY_CONNECTED", "BATCH_MATMUL")


def asymmetric_inputs(model: bytes) -> tuple[bytes, int]:
    """Mark every hybrid op of `model` to quantize its float input per row with a zero point; (model, ops marked).

    What XNNPACK does anyway (qd8 inputs); the built-in kernels do it only when asked, and otherwise quantize
    symmetrically, which loses the sign-skewed rows' precision (see the module doc for the measurement).
    """
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    tree = flatbuffer_utils.read_model_from_bytearray(bytearray(model))  # resolves buffers stored by offset
    wanted = {getattr(schema.BuiltinOperator, name) for name in HYBRID_OPS}
    marked = 0
    for subgraph in tree.subgraphs:
        for op in subgraph.operators:
            code = tree.operatorCodes[op.opcodeIndex]
            if max(code.builtinCode, code.deprecatedBuiltinCode) not in wanted or op.builtinOptions is None:
                continue
            data, weight = (subgraph.tensors[i] for i in op.inputs[:2])
            if data.type == schema.TensorType.FLOAT32 and weight.type in (schema.TensorType.INT8, schema.TensorType.INT4):
                op.builtinOptions.asymmetricQuantizeInputs = True
                marked += 1
    return packed(tree), marked


def packed(tree: Any) -> bytes:
    """The flatbuffer of a model object (`flatbuffer_utils.read_model_from_bytearray`'s). Buffers it resolved from
    offsets hold bytearray slices, which the generated `Pack` writes one byte per call (20 s for the teacher's 23 MB);
    as numpy arrays they are written whole (`CreateNumpyVector`), the same bytes."""
    from ai_edge_litert.tools import flatbuffer_utils

    for buffer in tree.buffers:
        if buffer.data is not None and not isinstance(buffer.data, np.ndarray):
            buffer.data = np.frombuffer(bytes(buffer.data), dtype=np.uint8)
    return bytes(flatbuffer_utils.convert_object_to_bytearray(tree))


def module_scope(module: str, in_layer: bool) -> str:
    """Regex for the ops directly inside `module` (a dotted module path) in litert-torch op scopes.

    litert-torch names an op by its module path, one `<Class>_<attribute>` per level and `;<n>` after the
    op's own module (`.../BertLayer_0/BertOutput_output/torch.nn.modules.linear.Linear_dense;2`). `in_layer`:
    the path is inside one transformer layer (whose own level is `<Class>_<index>`); else inside the base model.
    An empty `module` inside a layer means the layer's own ops.
    """
    parts = [p for p in module.split(".") if p]
    body = "".join(rf"/[^/;]*_{re.escape(p)}" for p in parts)
    return (r"_\d+" if in_layer else "") + body + ";"


def _parent(module: str) -> str:
    return module.rpartition(".")[0]


def static_float_rules(family: Family, signatures: tuple[str, ...], outputs: tuple[str, ...]) -> list[FloatRule]:
    """Where int8-static keeps float, by Family module paths (measured on all-MiniLM-L6-v2, see module doc);
    `signatures`: every signature of the model (one per sequence-length bucket)."""
    layer_norms = [family.layer_module("attention_norm"), family.layer_module("output_norm")]
    embedding_norm = family.embedding_module("norm")
    ln_reason = "LayerNorm statistics (variance up to ~5e4) and its residual input (outlier channels)"
    rules = [FloatRule(module_scope(m, True), LAYER_NORM_OPS, ln_reason) for m in layer_norms]
    rules += [FloatRule(module_scope(_parent(m), True), ("ADD",), ln_reason) for m in layer_norms]
    if embedding_norm:
        rules.append(FloatRule(module_scope(embedding_norm, False), LAYER_NORM_OPS, ln_reason))
        rules.append(FloatRule(module_scope(_parent(embedding_norm), False), ("ADD",), ln_reason))
    rules += [
        FloatRule(
            module_scope(family.layer_module("attention"), True),
            ("ADD", "SOFTMAX"),
            "attention-mask addition (finfo.min) and softmax",
        ),
        FloatRule(WRAPPER_SCOPES, HEAD_OPS, "attention-mask construction, pooling and L2 normalisation"),
        FloatRule(task_head_scopes(family), HEAD_OPS, "a task model's attention-mask construction, pooler and head"),
        FloatRule(".*", ("OUTPUT",), "float32 outputs (the export contract)"),
        FloatRule(
            f"(?:{'|'.join(map(re.escape, signatures))})_(?:{'|'.join(map(re.escape, outputs))})_output",
            tuple(dict.fromkeys(("ADD", "DIV", "MUL", *HEAD_OPS))),
            "float32 outputs (the export contract; a task head's last layer writes its output tensor)",
        ),
    ]
    ffn_reason = "FFN projections: LayerNorm-output and post-GELU outliers (per-tensor int8 range too coarse)"
    rules += [FloatRule(module_scope(m, True), ("FULLY_CONNECTED",), ffn_reason) for m in _ffn_modules(family)]
    rules.append(FloatRule(".*", ("GELU",), ffn_reason))
    return rules


def _ffn_modules(family: Family) -> list[str]:
    return list(dict.fromkeys(family.layer_module(role) for role in FFN_ROLES))


def quantize_tflite_static(
    model: bytes,
    family: Family,
    calibration: dict[str, list[dict[str, np.ndarray]]],
    outputs: tuple[str, ...],
) -> bytes:
    """int8-static copy of the float32 flatbuffer `model`, calibrated on `calibration` ({signature: its inputs}: every
    signature, since each bucket's activations have their own ranges; the weights they share are quantized once)."""
    _set_env()
    if not calibration or not all(calibration.values()):
        raise ValueError("int8-static needs calibration inputs")
    from ai_edge_quantizer import qtyping, quantizer
    from ai_edge_quantizer.algorithm_manager import AlgorithmName

    op = qtyping.TFLOperationName
    qt = quantizer.Quantizer(bytearray(model))
    qt.add_static_config(".*", op.ALL_SUPPORTED, activation_num_bits=8, weight_num_bits=8)
    qt.add_dynamic_config(".*", op.EMBEDDING_LOOKUP, 8)  # int8 tables, float output (as in the int8 recipe)
    for rule in static_float_rules(family, tuple(calibration), outputs):
        for name in rule.ops:
            qt.update_quantization_recipe(rule.regex, op(name), algorithm_key=AlgorithmName.NO_QUANTIZE)
    # The calibrator draws progress bars and warns about preserving all tensors: both are its own business.
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        ranges = qt.calibrate(calibration, num_threads=min(2, os.cpu_count() or 1))
        result = qt.quantize(ranges, enable_progress_bar=False, enable_progress_report=False)
    return bytes(result.quantized_model)


def static_recipe_details(family: Family, signatures: tuple[str, ...], outputs: tuple[str, ...]) -> dict[str, Any]:
    """What int8-static did, for the export manifest."""
    return {
        "recipe": STATIC,
        "quantizer": "ai-edge-quantizer static (policy static_wi8_ai8)",
        "weights": "int8, channel-wise, symmetric (embedding tables int8, float output)",
        "activations": "int8, per-tensor, asymmetric, static",
        "calibration_method": "min/max over the calibration sentences, each padded to every bucket's length",
        "float_modules": {f"{role}_module": family.layer_module(role) for role in FFN_ROLES},
        "kept_float": [
            {"scope": r.regex, "ops": list(r.ops), "reason": r.reason} for r in static_float_rules(family, signatures, outputs)
        ],
    }


def weight_dtypes(model_path: str) -> dict[str, dict[str, int]]:
    """{op: {storage dtype of its weight: count}} for FULLY_CONNECTED and EMBEDDING_LOOKUP in a .tflite file.

    A weight fed through a DEQUANTIZE op (fp16 float casting) is reported with the dtype it is stored in.
    """
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=model_path)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    stored = _stored_types(model_path)
    ops = interpreter._get_ops_details()  # noqa: SLF001 - the public API has no op listing
    dequantized_from = {op["outputs"][0]: op["inputs"][0] for op in ops if op["op_name"] == "DEQUANTIZE"}
    summary: dict[str, dict[str, int]] = {}
    for op in ops:
        if op["op_name"] not in ("FULLY_CONNECTED", "EMBEDDING_LOOKUP"):
            continue
        weight = dequantized_from.get(op["inputs"][1], op["inputs"][1])
        dtype = stored.get(weight) or (tensors[weight]["dtype"].__name__ if weight in tensors else "unknown")
        counts = summary.setdefault(op["op_name"], {})
        counts[dtype] = counts.get(dtype, 0) + 1
    return summary


def _stored_types(model_path: str) -> dict[int, str]:
    """{tensor index: "int4"} for the first subgraph's 4-bit tensors (the interpreter reports them as int8)."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    tensors = flatbuffer_utils.read_model(model_path).subgraphs[0].tensors
    return {index: "int4" for index, tensor in enumerate(tensors) if tensor.type == schema.TensorType.INT4}


def activation_dtypes(model_path: str) -> dict[str, dict[str, int]]:
    """{op: {"<input dtype> -> <output dtype>": count}} over the compute ops of a .tflite file.

    The first input is the activation (for FULLY_CONNECTED / BATCH_MATMUL the weight or second operand is
    another input); QUANTIZE / DEQUANTIZE / RESHAPE / TRANSPOSE are left out.
    """
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=model_path)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    skipped = {"QUANTIZE", "DEQUANTIZE", "RESHAPE", "TRANSPOSE"}
    summary: dict[str, dict[str, int]] = {}
    for op in interpreter._get_ops_details():  # noqa: SLF001 - the public API has no op listing
        if op["op_name"] in skipped or not op["inputs"].size or not op["outputs"].size:
            continue
        first, out = op["inputs"][0], op["outputs"][0]
        if first not in tensors or out not in tensors:
            continue
        key = f"{tensors[first]['dtype'].__name__} -> {tensors[out]['dtype'].__name__}"
        counts = summary.setdefault(op["op_name"], {})
        counts[key] = counts.get(key, 0) + 1
    return summary
