"""The ONNX ``int4`` recipe: 4-bit weights in blocks, float compute (onnxruntime's ``MatMulNBitsQuantizer``).

Every weight MatMul becomes ``com.microsoft.MatMulNBits`` and the embedding tables ``GatherBlockQuantized``: symmetric
4-bit weights in blocks of `BLOCK` input channels, one float scale per block, dequantized inside the kernel and
multiplied in float (``accuracy_level`` unset: no activation quantization, so no CPU-dependent integer kernel and no
x86 saturation path to check). The layers of `INT8_FLOAT_ISLANDS` stay float as in the int8 recipe, tried in order
until the guard texts hold `RECIPE_MIN_COSINE`; their weights are stored as weight-only int8 when that holds too.
Both ops are onnxruntime contrib ops (CPU, wasm and the React Native build have them; other ONNX runtimes may not).

Post-training 4-bit rounding is far coarser than int8 (16 levels a block). Measured on all-MiniLM-L6-v2 over the
255 wide parity texts against its fp32 ONNX (min cosine / 1st percentile; AMD EPYC, onnxruntime 1.32):
- every MatMul and the tables, blocks of 32 / 64 / 128: 0.859 / 0.832 / 0.782 (14.3 / 12.9 / 12.2 MB);
- MatMuls only, blocks of 32: symmetric 0.864, asymmetric 0.882, blocks of 16 0.897; the tables alone: 0.959;
- the FFN projections float, the rest 4-bit: 0.948; ``accuracy_level`` 4 (int8 activations) changed none of these
  by more than 0.01;
- HQQ instead of round-to-nearest (onnxruntime's ``HQQWeightOnlyQuantConfig``, asymmetric, blocks of 32): 0.906.
So the teacher has no 4-bit recipe at the 0.99 gate; the export refuses it and names the recipes that hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from edgebert.families import Family
from edgebert.targets.base import INT8_FLOAT_ISLANDS, RECIPE_MIN_COSINE
from edgebert.targets.onnx.quantize import (
    guard_min_cosine, guard_reference, module_matmuls, quiet_ort_logging, weight_only_if_faithful,
)  # fmt: skip

INT4 = "int4"
BLOCK = 32  # input channels per scale: the most faithful of 32, 64 and 128 (module doc)
# Logs a line per node, and that it moves the file to opset 21 (4-bit tensors need it; parity runs the result).
QUANTIZER_LOGGER = "onnxruntime.quantization.matmul_nbits_quantizer"


def quantize_int4(src: Path, dst: Path, family: Family, guard: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
    """Write the int4 copy of `src` to `dst` with the first float islands that hold on `guard`; what was done."""
    reference = guard_reference(src, guard)
    for roles in INT8_FLOAT_ISLANDS:
        excluded = module_matmuls(src, family, [family.layer_module(role) for role in roles])
        write_int4(src, dst, excluded)
        measured = guard_min_cosine(dst, guard, reference)
        if measured is None or measured >= RECIPE_MIN_COSINE:
            break
    info: dict[str, Any] = {
        "recipe": INT4,
        "weights": f"4-bit symmetric, blocks of {BLOCK} input channels (MatMulNBits; tables GatherBlockQuantized)",
        "compute": "float32 (weights dequantized in the kernel)",
        "float_islands": list(roles),
        "excluded_nodes": excluded,
    }
    if measured is not None:
        info["guard"] = {"texts": len(guard or ()), "min_cosine": round(measured, 6), "required": RECIPE_MIN_COSINE}
    info["float_island_weights"] = weight_only_if_faithful(dst, excluded, guard, reference)
    return info


def write_int4(src: Path, dst: Path, excluded: list[str]) -> None:
    """`src` with every weight MatMul but `excluded` and every embedding Gather at 4 bits, saved to `dst`."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(src)), bits=4, block_size=BLOCK, is_symmetric=True, nodes_to_exclude=excluded,
        op_types_to_quantize=("MatMul", "Gather"), quant_axes=(("MatMul", 0), ("Gather", 1)),
    )  # fmt: skip
    with quiet_ort_logging(QUANTIZER_LOGGER), np.errstate(invalid="ignore", divide="ignore"):  # all-zero blocks: scale 0 -> 0
        quantizer.process()
    quantizer.model.save_model_to_file(str(dst), use_external_data_format=False)

