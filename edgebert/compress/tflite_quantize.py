"""TFLite quantization recipes, applied to a float32 .tflite flatbuffer with ai-edge-quantizer.

Both recipes are post-conversion rewrites of the flatbuffer, so they work the same on the litert-torch
path and on the TensorFlow fallback path:

- ``int8``: dynamic-range quantization (``dynamic_wi8_afp32``): channel-wise symmetric int8 weights for
  FULLY_CONNECTED / BATCH_MATMUL / CONV and the EMBEDDING_LOOKUP tables (the word-embedding table is
  the largest tensor of a small BERT), float32 activations quantized on the fly by the kernels.
- ``fp16``: litert-torch's ``full_fp16_recipe`` (float casting of the same weights to float16, dequantized
  to float32 in the graph; compute stays float32).
"""

from __future__ import annotations

import os
from typing import Any

RECIPES = ("int8", "fp16")


def _quiet_env() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("LITERT_TORCH_SHOW_PROGRESS", "n")


def quantization_recipe(recipe: str) -> Any:
    """The ai-edge-quantizer recipe (a list of op configs) for an edgebert quantization name."""
    _quiet_env()
    if recipe == "int8":
        from ai_edge_quantizer import recipe as aeq_recipe

        # ALL_SUPPORTED under the dynamic_wi8_afp32 policy includes EMBEDDING_LOOKUP, so the embedding
        # tables are stored as int8 too (checked by `weight_dtypes` in the tests).
        return aeq_recipe.dynamic_wi8_afp32()
    if recipe == "fp16":
        from litert_torch.generative.quantize import quant_recipes
        from litert_torch.quantize import translate_recipe

        return translate_recipe.translate_to_ai_edge_recipe(quant_recipes.full_fp16_recipe().generative_recipe)
    raise ValueError(f"unknown TFLite quantization recipe '{recipe}'; expected one of {RECIPES}")


def quantize_tflite(model: bytes, recipe: str) -> bytes:
    """A quantized copy of the float32 TFLite flatbuffer `model` under `recipe` ('int8' or 'fp16')."""
    _quiet_env()
    from ai_edge_quantizer import quantizer

    qt = quantizer.Quantizer(bytearray(model), quantization_recipe(recipe))
    result = qt.quantize(enable_progress_bar=False, enable_progress_report=False)
    return bytes(result.quantized_model)


def weight_dtypes(model_path: str) -> dict[str, dict[str, int]]:
    """{op: {storage dtype of its weight: count}} for FULLY_CONNECTED and EMBEDDING_LOOKUP in a .tflite file.

    A weight fed through a DEQUANTIZE op (fp16 float casting) is reported with the dtype it is stored in.
    """
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=model_path)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    ops = interpreter._get_ops_details()  # noqa: SLF001 - the public API has no op listing
    dequantized_from = {op["outputs"][0]: op["inputs"][0] for op in ops if op["op_name"] == "DEQUANTIZE"}
    summary: dict[str, dict[str, int]] = {}
    for op in ops:
        if op["op_name"] not in ("FULLY_CONNECTED", "EMBEDDING_LOOKUP"):
            continue
        weight = dequantized_from.get(op["inputs"][1], op["inputs"][1])
        dtype = tensors[weight]["dtype"].__name__ if weight in tensors else "unknown"
        counts = summary.setdefault(op["op_name"], {})
        counts[dtype] = counts.get(dtype, 0) + 1
    return summary
