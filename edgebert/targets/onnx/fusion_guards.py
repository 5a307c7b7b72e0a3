"""Graph choices that keep onnxruntime's load-time fusions off kernels slower than the ops they replace.

onnxruntime (1.31, CPU) fuses a residual `Add` followed by `LayerNormalization` into its contrib
`SkipLayerNormalization` whenever the graph's shapes are known (the quantizer's shape inference makes them known
in every int8 file), and that kernel runs ~7x slower than the two ops it replaces: 0.23 vs 0.03 ms for a
[1, 128, 384] input (Intel Xeon, AVX-512, one thread; an isolated two-node graph gives the same numbers). On the
3-layer students it was a fifth of the ONNX call. Writing those residual sums as the standard `Sum` op (the same
float addition, any number of inputs, broadcasting as `Add`) computes the same values and leaves the fusion nothing
to match, on every runtime, with the session options apps use by default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def residual_adds_as_sum(model: Any) -> int:
    """Rewrite each `Add` whose output feeds a `LayerNormalization` as `Sum`; returns how many were rewritten."""
    feeds_norm = {n.input[0] for n in model.graph.node if n.op_type == "LayerNormalization" and n.domain in ("", "ai.onnx")}
    rewritten = 0
    for node in model.graph.node:
        if node.op_type == "Add" and node.domain in ("", "ai.onnx") and node.output[0] in feeds_norm:
            node.op_type = "Sum"
            rewritten += 1
    return rewritten


def guard_file(path: Path) -> dict[str, Any]:
    """Apply the rewrites to the ONNX file at `path` in place; what was done (for the export manifest)."""
    import onnx

    model = onnx.load(str(path))
    count = residual_adds_as_sum(model)
    if count:
        onnx.save(model, str(path))
    return {"residual_adds_as_sum": count, "why": "onnxruntime's SkipLayerNormalization fusion is slower than Add + LayerNormalization on CPU"}
