"""ONNX quantization recipes on top of onnxruntime.quantization (and ORT's fp16 converter)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np


def quantize_onnx(src: Path, dst: Path, recipe: str, calibration: Iterable[dict[str, np.ndarray]] | None) -> None:
    """Write a quantized copy of `src` to `dst`: 'int8' dynamic per-channel, 'fp16', or 'int8-static' (QDQ)."""
    if recipe == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # Per-channel weights: per-tensor int8 loses ~5 % cosine on MiniLM (STACK.md). Gather is
        # included so the embedding table, the largest tensor of a small BERT, is stored as int8 too.
        quantize_dynamic(
            str(src),
            str(dst),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Gather"],
        )
    elif recipe == "fp16":
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16

        model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
        onnx.save(model, str(dst))
    else:
        raise ValueError(f"unknown ONNX quantization recipe '{recipe}'")
