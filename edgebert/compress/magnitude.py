"""Unstructured magnitude pruning: zero the smallest-|w| share of every encoder Linear weight.

Each Linear weight inside the transformer layers (query, key, value, attention output, FFN up and down) loses its
own `fraction` of entries, the ones with the smallest absolute value (`torch.nn.utils.prune.l1_unstructured`, then
`prune.remove` so the zeros are baked into an ordinary dense weight). Biases, embeddings, LayerNorms, the pooler
and any MLM head are left alone.

The model stays dense: same shapes, same float32 safetensors file, same matmuls. The zeros only pay off where the
file is compressed (a zip or gzip download, an app bundle), because runs of zero bytes deflate well. Neither the raw
file size nor the latency changes; for those, prune heads and FFN neurons (which remove whole rows) or quantize.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import torch
from torch.nn.utils import prune

from edgebert.families import Family

NOTE = (
    "magnitude sparsity zeroes weights in place: it shrinks the zip/gzip-compressed size only; "
    "the raw model.safetensors keeps its size and inference does the same dense work (no latency gain)"
)
GZIP_LEVEL = 6  # what `gzip` and zip use by default


def encoder_linears(base_model: torch.nn.Module, family: Family) -> list[tuple[str, torch.nn.Linear]]:
    """Every nn.Linear inside the transformer layers, named `layer.{i}.{path}`."""
    found = []
    for i, layer in enumerate(family.layers(base_model)):
        for name, module in layer.named_modules():
            if isinstance(module, torch.nn.Linear):
                found.append((f"layer.{i}.{name}", module))
    return found


def apply_magnitude_sparsity(base_model: torch.nn.Module, family: Family, fraction: float) -> dict[str, Any]:
    """Zero the smallest-|w| `fraction` of each encoder Linear weight in place; a record of what was zeroed."""
    modules = encoder_linears(base_model, family)
    zeroed = total = 0
    per_module = {}
    for name, module in modules:
        prune.l1_unstructured(module, name="weight", amount=fraction)
        prune.remove(module, "weight")
        zeros = int((module.weight == 0).sum())
        per_module[name] = round(zeros / module.weight.numel(), 6)
        zeroed += zeros
        total += module.weight.numel()
    return {
        "fraction": fraction,
        "scope": "weights of every nn.Linear in the encoder layers (biases, embeddings, norms, pooler, MLM head untouched)",
        "modules": len(modules),
        "weights": total,
        "zeroed": zeroed,
        "zero_fraction_per_module": per_module,
    }


def gzip_size(path: Path, level: int = GZIP_LEVEL) -> int:
    """Bytes of `path` once gzip-compressed (streamed; nothing written)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    size = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            size += len(compressor.compress(block))
    return size + len(compressor.flush())
