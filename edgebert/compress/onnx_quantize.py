"""ONNX quantization recipes on top of onnxruntime.quantization (and ORT's fp16 converter)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from edgebert.families import Family


def quantize_onnx(
    src: Path,
    dst: Path,
    recipe: str,
    family: Family,
    calibration: Iterable[dict[str, np.ndarray]] | None = None,
) -> None:
    """Write a quantized copy of `src` to `dst`: 'int8' dynamic per-channel, 'fp16', or 'int8-static' (QDQ)."""
    if recipe == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # Per-channel weights: per-tensor int8 loses ~5 % cosine on MiniLM (STACK.md). Gather is
        # included so the embedding table, the largest tensor of a small BERT, is stored as int8 too.
        # The FFN down-projections stay float: their input (post-GELU) has outliers that per-tensor
        # dynamic activation ranges clip (Bondarenko et al. 2021); quantizing them cost all-MiniLM-L6-v2
        # ~0.006 of min cosine (0.989 -> 0.983 on the parity sentences).
        quantize_dynamic(
            str(src),
            str(dst),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Gather"],
            nodes_to_exclude=ffn_down_projections(src, family),
        )
    elif recipe == "fp16":
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16

        model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
        onnx.save(model, str(dst))
    else:
        raise ValueError(f"unknown ONNX quantization recipe '{recipe}'")


def ffn_down_projections(path: Path, family: Family) -> list[str]:
    """Names of the MatMul nodes of each layer's FFN output projection (torch.onnx names nodes by module path)."""
    import onnx

    ffn = "/" + family.ffn_output_module.replace(".", "/") + "/"
    attention = "/" + family.attention_output_module.replace(".", "/") + "/"
    graph = onnx.load(str(path), load_external_data=False).graph
    return [n.name for n in graph.node if n.op_type == "MatMul" and ffn in n.name and attention not in n.name]
