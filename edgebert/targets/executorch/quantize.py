"""ExecuTorch quantization recipes, applied to the module before `torch.export` (torchao's `quantize_`), lowered to
XNNPACK's dynamically quantized linear kernels:

- `int8` (ExecuTorch's 8da8w): int8 activations quantized per call and row, int8 weights per output channel;
- `int4` (8da4w): the same activations, 4-bit weights in groups of `INT4_GROUP` input channels.

Only Linear layers are quantized (the word table stays float: its quantized lookup is not an XNNPACK kernel). As in
the ONNX and TFLite int8 recipes, the layers of `INT8_FLOAT_ISLANDS` stay float, trying the islands in order until the
model holds `RECIPE_MIN_COSINE` on the guard texts in ExecuTorch's runtime; the parity check on other texts follows.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from edgebert.families import Family
from edgebert.targets.base import INT8_FLOAT_ISLANDS, RECIPE_MIN_COSINE

INT4_GROUP = 32
RECIPES = {
    "int8": "int8 dynamic activations (per row), int8 weights per output channel (ExecuTorch 8da8w)",
    "int4": f"int8 dynamic activations (per row), 4-bit weights in groups of {INT4_GROUP} (ExecuTorch 8da4w)",
}


def quantize_config(recipe: str) -> Any:
    """torchao's config for `recipe` (`RECIPES`)."""
    import torch
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig
    from torchao.quantization.granularity import PerAxis, PerGroup

    if recipe == "int8":
        return Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0))
    if recipe == "int4":
        return Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(INT4_GROUP))
    raise ValueError(f"unknown ExecuTorch quantization recipe '{recipe}'")


def island_pattern(family: Family, roles: tuple[str, ...]) -> re.Pattern[str]:
    """Module names (in the exported module) of the layers `roles` name, in every transformer layer."""
    inner = re.escape(f"{family.layer_inner_path}.") if family.layer_inner_path else ""
    modules = "|".join(re.escape(family.layer_module(role)) for role in roles)
    return re.compile(rf"(^|\.){re.escape(family.layers_path)}\.\d+\.{inner}({modules})$")


def quantized_module(module: Any, family: Family, recipe: str, roles: tuple[str, ...]) -> Any:
    """A copy of `module` with every Linear but the `roles` islands quantized by `recipe`."""
    from torch import nn
    from torchao.quantization import quantize_

    islands = island_pattern(family, roles)
    copied = copy.deepcopy(module).eval()

    def chosen(layer: Any, name: str) -> bool:
        return isinstance(layer, nn.Linear) and not islands.search(name)

    quantize_(copied, quantize_config(recipe), filter_fn=chosen)
    return copied


def quantize_with_islands(
    module: Any, family: Family, recipe: str, lower: Callable[[Any], bytes], run: Callable[[bytes, dict[str, np.ndarray]], dict[str, np.ndarray]],
    guard: list[dict[str, np.ndarray]],
) -> tuple[bytes, dict[str, Any]]:
    """The lowered program of the first float-island set that holds on the guard texts, and what was chosen."""
    import torch

    from edgebert.parity import compare

    with torch.no_grad():
        reference = [{"out": module(*[torch.from_numpy(f[n]).long() for n in family.input_names()])} for f in guard]
    for roles in INT8_FLOAT_ISLANDS:
        program = lower(quantized_module(module, family, recipe, roles))
        worst = 1.0
        for feed, expected in zip(guard, reference):
            got = run(program, feed)
            ref = {name: value.numpy() for name, value in zip(got, expected["out"])}
            worst = min(worst, compare(ref, got, feed["attention_mask"], RECIPE_MIN_COSINE).min_cosine)
        if worst >= RECIPE_MIN_COSINE:
            break
    info = {
        "recipe": recipe, "scheme": RECIPES[recipe], "float_islands": list(roles),
        "guard": {"texts": len(guard), "min_cosine": round(float(worst), 6), "required": RECIPE_MIN_COSINE},
    }  # fmt: skip
    return program, info
