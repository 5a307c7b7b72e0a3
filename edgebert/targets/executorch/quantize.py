"""ExecuTorch quantization recipes, applied to the module before `torch.export` (torchao's `quantize_`), lowered to
XNNPACK's dynamically quantized linear kernels:

- `int8` (ExecuTorch's 8da8w): int8 activations quantized per call and row, int8 weights per output channel;
- `int4` (8da4w): the same activations, 4-bit weights in groups of `INT4_GROUP` input channels, torchao's
  `SYMMETRIC_NO_CLIPPING_ERR` scales: the `executorch-int4` weight grid (edgebert/weight_grids.py), whose points map
  to themselves, so a model trained on it exports exactly. A Linear whose input width `INT4_GROUP` does not divide
  (a pruned FFN's down-projection) is stored as in `int8`: XNNPACK's 4-bit groups must be a multiple of 32.
- `w4a8`: the same activations, 4-bit weights with one scale per output channel (the same torchao scales): XNNPACK
  multiplies them with its per-channel 4-bit kernels (qd8-f32-qc4w), which run as fast as its int8 ones where its
  grouped 4-bit kernels do not (`benchmarks/results/w4a8/et-kernels.txt`). XNNPACK takes a row as one group, so
  a Linear whose input width 32 does not divide is stored int8, as in `int4`. The `executorch-w4a8` grid. Tables
  as `int4`.

The embedding tables (the word table is most of a small student's bytes) are stored as `QuantizedTable`s: int8 rows
(`int8`), looked up by the portable embedding kernel and scaled in the graph, or 4-bit groups on the same grid
(`int4`, `w4a8`), looked up by ExecuTorch's quantized kernel `embedding_4bit` (not an XNNPACK op: its quantized kernel
library, which the manifest's `kernel_libraries` names). Float islands as in the ONNX and
TFLite int8 recipes, tried in order until the model holds `RECIPE_MIN_COSINE` on the guard texts in ExecuTorch's
runtime, none first (`LADDERS`: per-row activations need them less); the parity check on other texts follows.
"""

from __future__ import annotations

import contextlib
import copy
import re
from collections.abc import Callable, Collection, Iterator
from typing import Any

import numpy as np
import torch
from torch import nn

from edgebert import cost
from edgebert.families import Family
from edgebert.targets.base import (
    INT4_FLOAT_ISLANDS,
    RECIPE_MIN_COSINE,
    guard_min_cosine,
    guard_record,
)
from edgebert.weight_grids import INT4_BLOCK as INT4_GROUP
from edgebert.weight_grids import executorch_int4_linear, torchao_int4

# 8da8w quantizes activations per row (token), not per tensor as onnxruntime's dynamic int8 does: the `small`
# preset's pruned student holds the guard with no float island at all (guard 0.99891, parity 0.99910 over the wide
# texts; 6.1 MB against 7.9 MB with the FFN down-projections float; AMD EPYC), so int8 tries none first, as int4 does.
LADDERS = {"int8": INT4_FLOAT_ISLANDS, "int4": INT4_FLOAT_ISLANDS, "w4a8": INT4_FLOAT_ISLANDS}
RECIPES = {
    "int8": "int8 dynamic activations (per row), int8 weights per output channel (ExecuTorch 8da8w)",
    "int4": f"int8 dynamic activations (per row), 4-bit symmetric weights in groups of {INT4_GROUP} (ExecuTorch 8da4w, scale max(min/-8, max/7))",
    "w4a8": "int8 dynamic activations (per row), 4-bit symmetric weights per output channel (ExecuTorch 8da4w, scale max(min/-8, max/7))",
}

TABLES = {
    "int8": "int8 per row, looked up by the portable embedding kernel and scaled in the graph (no quantized kernel library)",
    "int4": f"4-bit symmetric, groups of {INT4_GROUP}, scale max(min/-8, max/7) (ExecuTorch embedding_4bit)",
    "w4a8": f"4-bit symmetric, groups of {INT4_GROUP}, scale max(min/-8, max/7) (ExecuTorch embedding_4bit)",
}


def quantize_config(recipe: str) -> Any:
    """torchao's config for `recipe` (`RECIPES`)."""
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, MappingType
    from torchao.quantization.granularity import PerAxis, PerGroup

    if recipe == "int8":
        return Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0))
    if recipe in ("int4", "w4a8"):  # groups of INT4_GROUP, or one group a row
        granularity = PerGroup(INT4_GROUP) if recipe == "int4" else PerAxis(0)
        return Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=granularity, weight_mapping_type=MappingType.SYMMETRIC_NO_CLIPPING_ERR
        )
    raise ValueError(f"unknown ExecuTorch quantization recipe '{recipe}'")


def island_pattern(family: Family, roles: tuple[str, ...]) -> re.Pattern[str]:
    """Module names (in the exported module) of the layers `roles` name, in every transformer layer."""
    inner = re.escape(f"{family.layer_inner_path}.") if family.layer_inner_path else ""
    modules = "|".join(re.escape(family.layer_module(role)) for role in roles)
    return re.compile(rf"(^|\.){re.escape(family.layers_path)}\.\d+\.{inner}({modules})$")


@contextlib.contextmanager
def looked_up_tables(module: Any) -> Iterator[set[str]]:
    """Within the block, the names of the nn.Embedding modules `module` calls. A table whose weight is read whole
    (DeBERTa's relative-position embeddings, through a LayerNorm) is not a lookup and stays float."""
    called: set[str] = set()
    hooks = [
        layer.register_forward_pre_hook(lambda _m, _i, name=name: called.add(name))
        for name, layer in module.named_modules() if isinstance(layer, nn.Embedding)
    ]  # fmt: skip
    try:
        yield called
    finally:
        for hook in hooks:
            hook.remove()


def quantized_module(module: Any, family: Family, recipe: str, roles: tuple[str, ...], tables: Collection[str] = ()) -> Any:
    """A copy of `module` with every Linear but the `roles` islands quantized by `recipe`, and the embedding tables
    `tables` (the looked-up ones) stored quantized."""
    from torchao.quantization import quantize_

    islands = island_pattern(family, roles)
    copied = copy.deepcopy(module).eval()

    def chosen(layer: Any, name: str) -> bool:
        return isinstance(layer, nn.Linear) and not islands.search(name)

    if recipe in ("int4", "w4a8"):  # 4 bits where XNNPACK has the kernel, int8 elsewhere
        quantize_(copied, quantize_config(recipe), filter_fn=lambda m, n: chosen(m, n) and executorch_int4_linear(m.in_features))
        quantize_(copied, quantize_config("int8"), filter_fn=lambda m, n: chosen(m, n) and not executorch_int4_linear(m.in_features))
    else:
        quantize_(copied, quantize_config(recipe), filter_fn=chosen)
    for name in sorted(tables):
        parent, _, attribute = name.rpartition(".")
        owner = copied.get_submodule(parent) if parent else copied
        setattr(owner, attribute, QuantizedTable(getattr(owner, attribute), 8 if recipe == "int8" else 4))
    return copied


def quantized_table_ops() -> None:
    """Register ExecuTorch's quantized embedding ops with torch (for export) and their CPU kernels with the runtime."""
    import executorch.exir.passes._quant_patterns_and_replacements  # noqa: F401 - defines quantized_decomposed::embedding_*
    import executorch.kernels.quantized  # noqa: F401 - loads their kernels into the Python runtime


def table_storage(weight: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(quantized weight, scales) of a [rows, dim] float table: symmetric int8 per row, or 4-bit on the int4 grid
    (`torchao_int4`: groups of `INT4_GROUP`, per row when dim is not a multiple) packed two to a byte as
    `embedding_4bit` reads them (the even element in the high nibble, each stored as q + 8)."""
    rows, dim = weight.shape
    w = weight.detach().float()
    if bits == 8:
        scales = (w.abs().amax(dim=-1, keepdim=True) / 127).clamp(min=torch.finfo(torch.float32).tiny)  # [rows, 1]
        return torch.clamp(torch.round(w / scales), -128, 127).to(torch.int8), scales
    quantized, scales = torchao_int4(w)
    stored = (quantized + 8).to(torch.uint8)
    return (stored[:, 0::2] * 16 + stored[:, 1::2]).to(torch.uint8), scales


class QuantizedTable(nn.Module):
    """An nn.Embedding as int8 rows or 4-bit groups (`table_storage`).

    int8 rows are looked up as `embedding(int8 table) -> float * embedding(row scales)`: the portable kernels every
    ExecuTorch runtime has (`aten::embedding`, a cast; the product runs in XNNPACK), the same arithmetic as
    `quantized_decomposed::embedding_byte` (int8 code times its row's scale, in float32) and the same bytes, but no
    kernel library an app's runtime may not register (react-native-executorch's Android build: docs/export.md).
    4-bit groups are read by `quantized_decomposed::embedding_4bit` (ExecuTorch's quantized kernel library), which
    unpacks the nibbles; the manifest's `kernel_libraries` names it."""

    def __init__(self, table: nn.Embedding, bits: int) -> None:
        super().__init__()
        quantized_table_ops()
        self.bits = bits
        weight, scales = table_storage(table.weight, bits)
        self.register_buffer("weight", weight)
        self.register_buffer("scales", scales)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        if self.bits == 4:
            ops = torch.ops.quantized_decomposed
            return ops.embedding_4bit.dtype(self.weight, self.scales, None, -8, 7, indices, dtype=torch.float32)
        return nn.functional.embedding(indices, self.weight).to(torch.float32) * nn.functional.embedding(indices, self.scales)


def quantize_with_islands(
    module: Any, family: Family, recipe: str, lower: Callable[[Any], bytes], load: Callable[[bytes], Any],
    guard: list[dict[str, np.ndarray]],
) -> tuple[bytes, dict[str, Any]]:
    """The lowered program of the first float-island set that holds on the guard texts (each rung's program loaded
    once, by `load`, into a runner), and what was chosen."""
    from edgebert.parity import torch_references

    with looked_up_tables(module) as tables, cost.phase("guard reference (PyTorch)"):  # which tables are looked up
        reference = torch_references(module, guard)
    ladder = LADDERS[recipe]
    for rung, roles in enumerate(ladder):
        label = f"rung {rung} ({'+'.join(roles) or 'no islands'})"
        with cost.phase(f"{label}: quantize + lower"):
            program = lower(quantized_module(module, family, recipe, roles, tables))
        with cost.phase(f"{label}: guard"):
            worst = guard_min_cosine(load(program), guard, reference, RECIPE_MIN_COSINE if rung < len(ladder) - 1 else None)
        if worst >= RECIPE_MIN_COSINE:
            break
    info = {
        "recipe": recipe, "scheme": RECIPES[recipe], "tables": TABLES[recipe], "float_islands": list(roles),
        "guard": guard_record(guard, worst),
    }  # fmt: skip
    unquantized = sorted(n for n, m in module.named_modules() if isinstance(m, nn.Embedding) and n not in tables)
    if unquantized:
        info["float_tables"] = unquantized  # read whole, not looked up
    return program, info
