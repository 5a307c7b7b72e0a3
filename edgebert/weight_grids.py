"""The 4-bit weight grids of the runtimes' quantizers, in torch: what `export --quantize int4` will store, so a model can
be trained on it (quantization-aware) and saved with its weights already there.

A post-training 4-bit export rounds every weight to 16 levels a block, and on a small model that moves the
embedding far from the float model's (min cosine 0.96-0.97 on the `small` preset's student: refused at the 0.99
gate). Training on the grid instead (`distill --weight-grid`, healing's too) gives a model whose float weights *are*
grid points: the runtime's quantizer maps them to themselves (its rule is idempotent), the 4-bit file computes what
the model computes, and what the rounding costs in quality is paid, and recovered, in training, where bench's
retention sees it.

Each grid is the quantizer's own rule, written in torch (a test compares it with the library bit for bit):
- ``onnx-int4``: onnxruntime's `MatMulNBitsQuantizer`, symmetric, blocks of 32 input channels (MatMul) or hidden
  channels (Gather of an embedding table): scale = the block's signed extreme / -8, q = round(w / scale) in [-8, 7].
- ``executorch-int4``: torchao's affine quantization with `SYMMETRIC_NO_CLIPPING_ERR` (the ExecuTorch int4 recipe's
  weights and its 4-bit tables), groups of 32: scale = max(min / -8, max / 7), so neither extreme is clipped and a
  grid point maps to itself (to a float ulp of its scale). (torchao's default `SYMMETRIC`, amax / 7.5, moves its
  own output: it has no fixed points.) A table whose width 32 does not divide is one group a row; a Linear whose
  input width 32 does not divide (a pruned FFN's 507) has no 4-bit kernel in XNNPACK, whose 4-bit groups must be a
  multiple of 32: the recipe stores it int8 and the grid leaves it as it is.

- ``onnx-w4a8``: the ONNX `w4a8` recipe's two-level 4-bit codes (`two_level_int4`): one float scale a row, a 4-bit
  multiplier (1-9) a block of 32, 4-bit values (-7..7). Their product is an int8 code of at most 63 in magnitude, so
  the file stores 4 bits a weight and onnxruntime folds them at load into the 7-bit int8 weights its int8 kernels
  multiply (edgebert.targets.onnx.w4a8): 4-bit bytes at int8 speed, and no x86 kernel can saturate on them.
- ``executorch-w4a8``: ExecuTorch's `w4a8` recipe: `executorch-int4`'s rule with one group a Linear's row (XNNPACK's
  per-channel 4-bit kernels; a row 32 does not divide is stored int8 and left as it is), its tables as
  `executorch-int4`'s.

- ``tflite-w4a8``: TFLite's `w4a8` recipe: ai-edge-quantizer's channelwise 4-bit weights (`litert_channelwise_int4`:
  one float32 scale a row, its largest magnitude / 7), which XNNPACK multiplies with its per-channel 4-bit kernels; a
  Linear whose input width 32 does not divide is stored int8 and left as it is. litert-torch's converter folds a norm's
  weight into each Linear that reads the norm's output as it is (W diag(gamma): the query / key / value projections
  after a layer's output norm, the FFN up-projection after the attention norm), so the tensor the quantizer rounds is
  W diag(gamma), not W: this grid rounds that product (`litert_torch_folds`: found by converting the model once), and the model keeps
  round(W diag(gamma)) diag(1 / gamma), which the converter folds back onto the grid.

TFLite `int4` (`litert_blockwise_int4`, blocks of 32) has the rule but no grid of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from edgebert.errors import UserError

INT4_BLOCK = 32  # the 4-bit block and kernel group of every target (ONNX, TFLite and ExecuTorch read it from here)


def _blocks(w: torch.Tensor, block: int) -> tuple[torch.Tensor, int]:
    """`w` [..., k] as [..., ceil(k / block), block], zero-padded (zeros never change a block's extreme)."""
    pad = (-w.shape[-1]) % block
    padded = nn.functional.pad(w, (0, pad)) if pad else w
    return padded.reshape(*w.shape[:-1], -1, block), pad


def onnxruntime_symmetric_int4(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """`w` [..., k] rounded as onnxruntime's symmetric 4-bit quantizer rounds it along its last axis, dequantized."""
    x, pad = _blocks(w.float(), block)
    hi, lo = x.amax(-1, keepdim=True), x.amin(-1, keepdim=True)
    scale = torch.where(hi.abs() > lo.abs(), hi, lo) / -8.0
    q = torch.where(scale == 0, torch.zeros_like(x), x / scale).round().clamp(-8, 7)
    out = (q * scale).reshape(*w.shape[:-1], -1)
    return (out[..., : w.shape[-1]] if pad else out).to(w.dtype)


def int4_group(k: int, block: int = INT4_BLOCK) -> int:
    """ExecuTorch int4's group for rows of `k` values: `block`, or the whole row when `block` does not divide `k`."""
    return block if k % block == 0 else k


def executorch_int4_linear(in_features: int, block: int = INT4_BLOCK) -> bool:
    """Whether ExecuTorch's int4 recipe stores a Linear of `in_features` inputs at 4 bits (XNNPACK's 4-bit groups
    must be a multiple of 32); otherwise int8."""
    return in_features % block == 0


def torchao_int4(w: torch.Tensor, block: int = INT4_BLOCK) -> tuple[torch.Tensor, torch.Tensor]:
    """(q int8 in [-8, 7] as `w` [rows, k], scale [rows, groups]): ExecuTorch's int4 recipe on `w`, by torchao's own
    functions (SYMMETRIC_NO_CLIPPING_ERR, groups `int4_group`)."""
    from torchao.quantization.quant_primitives import MappingType, choose_qparams_affine, quantize_affine

    x = w.detach().float()
    size = (1, int4_group(x.shape[-1], block))
    scale, zero = choose_qparams_affine(x, MappingType.SYMMETRIC_NO_CLIPPING_ERR, size, torch.int8, -8, 7, zero_point_dtype=torch.int8, keepdim=True)
    return quantize_affine(x, size, scale, zero, torch.int8, -8, 7), scale


def torchao_symmetric_int4(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """`w` [..., k] on ExecuTorch's int4 grid (`torchao_int4`), dequantized as its kernels do (q × scale): its tables."""
    q, scale = torchao_int4(w.reshape(-1, w.shape[-1]), block)
    groups = scale.shape[-1]
    return (q.float().reshape(q.shape[0], groups, -1) * scale[..., None]).reshape(w.shape).to(w.dtype)


def torchao_symmetric_int4_linear(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """A Linear's [out, in] weight on ExecuTorch's int4 grid, or as it is when the recipe stores it int8."""
    return torchao_symmetric_int4(w, block) if executorch_int4_linear(w.shape[-1], block) else w


W4A8_LEVELS = 7  # |value| <= 7 in a block: 4 bits
W4A8_MULTIPLIERS = 9  # a block's multiplier 1..9 (4 bits): |code| <= 63, the int8 recipe's 7-bit range (no saturation)
W4A8_CODE_MAX = W4A8_LEVELS * W4A8_MULTIPLIERS


def two_level_int4_codes(w: torch.Tensor, block: int = INT4_BLOCK) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(codes [..., k] int, multipliers [..., ceil(k / block)] int, scale [..., 1]) of `w` [..., k] on the two-level
    grid: w ~ codes × scale, codes = values × their block's multiplier, values in [-7, 7], multipliers in [1, 9].

    The row's scale is its largest magnitude / 63. A block whose codes (w / scale rounded) are all multiples of a
    multiplier at least its need (largest code / 7, rounded up) keeps them: that is every block of a weight already on
    the grid, so the rule maps its points to themselves (to a float ulp of the scale). Any other block rounds w to its
    needed multiplier's steps."""
    x = w.detach().float()
    bound = x.abs().amax(-1, keepdim=True)
    scale = torch.where(bound > 0, bound / W4A8_CODE_MAX, torch.ones_like(bound))
    xb, pad = _blocks(x / scale, block)  # [..., nb, block] in units of the scale
    codes = xb.round()
    need = (codes.abs().amax(-1) / W4A8_LEVELS).ceil().clamp(1, W4A8_MULTIPLIERS)  # [..., nb]
    kept = torch.zeros_like(need, dtype=torch.bool)
    multiplier = need.clone()
    for m in range(W4A8_MULTIPLIERS, 0, -1):  # the smallest fitting multiplier wins (the last one written)
        fits = (m >= need) & (torch.remainder(codes, m) == 0).all(-1)
        multiplier = torch.where(fits, torch.full_like(need, m), multiplier)
        kept |= fits
    rounded = (xb / multiplier[..., None]).round().clamp(-W4A8_LEVELS, W4A8_LEVELS) * multiplier[..., None]
    codes = torch.where(kept[..., None], codes, rounded).reshape(*x.shape[:-1], -1)
    codes = codes[..., : x.shape[-1]] if pad else codes
    return codes.to(torch.int32), multiplier.to(torch.int32), scale


def two_level_int4(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """`w` [..., k] on the two-level grid (`two_level_int4_codes`), dequantized (codes × scale)."""
    codes, _, scale = two_level_int4_codes(w, block)
    return (codes.float() * scale).to(w.dtype)


def torchao_per_channel_int4(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """A Linear's [out, in] weight on ExecuTorch's w4a8 grid: `torchao_int4` with one group a row, or as it is when
    the recipe stores it int8 (XNNPACK takes the row as a group, which must be a multiple of `block`)."""
    return torchao_symmetric_int4(w, w.shape[-1]) if executorch_int4_linear(w.shape[-1], block) else w


def litert_channelwise_int4(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """`w` [rows, k] rounded as ai-edge-quantizer's channelwise 4-bit weights (`dynamic_wi4_afp32`): one float32 scale
    a row, its largest magnitude / 7, q = round(w / scale) (so in [-7, 7]), dequantized. A grid point maps to itself."""
    x = w.float()
    scale = x.abs().amax(-1, keepdim=True) / 7.0
    q = torch.where(scale == 0, torch.zeros_like(x), x / scale).round().clamp(-8, 7)
    return (q * scale).to(w.dtype)


def litert_channelwise_int4_linear(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """A Linear's [out, in] weight on TFLite's w4a8 grid, or as it is when the recipe stores it int8 (an input width
    `block` does not divide: `edgebert.targets.tflite.quantize.unblockable_ops`)."""
    return litert_channelwise_int4(w) if w.shape[-1] % block == 0 else w


def litert_torch_folds(model: nn.Module) -> dict[nn.Module, nn.Module]:
    """{Linear: norm} of the Linears litert-torch stores as W diag(gamma) (measured: edgebert.targets.tflite.folds)."""
    from edgebert.targets.tflite.folds import folded_norms

    return folded_norms(model)


def litert_blockwise_int4(w: torch.Tensor, block: int = INT4_BLOCK) -> torch.Tensor:
    """`w` [..., k] rounded as ai-edge-quantizer's symmetric blockwise 4-bit weights along its last axis (bfloat16
    scales), dequantized; as it is when `block` does not divide k (the TFLite recipe stores that tensor int8)."""
    if w.shape[-1] % block:
        return w
    x = w.float().reshape(*w.shape[:-1], -1, block)
    bound = x.abs().amax(-1, keepdim=True).clamp_min(1e-9)
    scale = (bound / 7.0).to(torch.bfloat16).to(torch.float16).float()  # the quantizer's float16 of a bfloat16
    q = torch.where(scale == 0, torch.zeros_like(x), x / scale).round().clamp(-8, 7)
    return (q * scale).reshape(w.shape).to(w.dtype)


@dataclass(frozen=True)
class WeightGrid:
    """A runtime quantizer's grid: the export target and quantization it is for, and its rounding rules for a
    Linear's weight and for an embedding table."""

    name: str
    target: str
    quantization: str
    block: int
    linear: Callable[[torch.Tensor, int], torch.Tensor]
    table: Callable[[torch.Tensor, int], torch.Tensor]
    # {Linear: norm} of the Linears the target's converter stores as W diag(gamma), measured on a model; None: none
    folds: Callable[[nn.Module], dict[nn.Module, nn.Module]] | None = None

    def rule_for(self, module: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
        """The rounding of `module`'s weight (a table's or a Linear's), blocks along its last axis."""
        return partial(self.table if isinstance(module, nn.Embedding) else self.linear, block=self.block)

    def snap(self, module: nn.Module, w: torch.Tensor | None = None) -> torch.Tensor:
        """`module`'s weight (or `w` in its place) on the grid: a Linear's [out, in] or a table's [rows, hidden]."""
        return self.rule_for(module)(module.weight.detach() if w is None else w)

    def record(self) -> dict[str, object]:
        return {"name": self.name, "target": self.target, "quantization": self.quantization, "block": self.block}


GRIDS = {
    g.name: g
    for g in (
        WeightGrid("onnx-int4", "onnx", "int4", INT4_BLOCK, onnxruntime_symmetric_int4, onnxruntime_symmetric_int4),
        WeightGrid("executorch-int4", "executorch", "int4", INT4_BLOCK, torchao_symmetric_int4_linear, torchao_symmetric_int4),
        WeightGrid("onnx-w4a8", "onnx", "w4a8", INT4_BLOCK, two_level_int4, two_level_int4),
        WeightGrid("executorch-w4a8", "executorch", "w4a8", INT4_BLOCK, torchao_per_channel_int4, torchao_symmetric_int4),
        WeightGrid("tflite-w4a8", "tflite", "w4a8", INT4_BLOCK, litert_channelwise_int4_linear, litert_channelwise_int4, folds=litert_torch_folds),
    )
}


def grid_for(target: str, quantization: str) -> WeightGrid | None:
    """The grid whose points `export --target target --quantize quantization` stores exactly, if there is one."""
    return next((g for g in GRIDS.values() if (g.target, g.quantization) == (target, quantization)), None)


def grid_named(name: str) -> WeightGrid:
    if name not in GRIDS:
        raise UserError(f"unknown weight grid '{name}'; choose one of: {', '.join(GRIDS)}")
    return GRIDS[name]


class _OnGrid(nn.Module):
    """A weight parametrization: the forward sees the weight on the grid, the gradient passes straight through."""

    def __init__(self, rule: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.rule = rule

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            snapped = self.rule(w)
        return w + (snapped - w).detach()


def grid_modules(model: nn.Module) -> dict[str, nn.Module]:
    """The modules whose weights the runtime stores at 4 bits, by name: every Linear (a weight MatMul) and Embedding
    (a Gather of a table)."""
    return {name: m for name, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Embedding))}


def _through_norm(rule: Callable[[torch.Tensor], torch.Tensor], norm: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """`rule` applied to W diag(gamma) (the norm's weight as it is now), returned as a weight of the model: the
    product the converter stores is then on the grid. A zero gamma's column is left as it is (it multiplies zeros)."""

    def snap(w: torch.Tensor) -> torch.Tensor:
        gamma = norm.weight.detach().to(w.dtype)
        safe = torch.where(gamma == 0, torch.ones_like(gamma), gamma)
        return torch.where(gamma == 0, w, rule(w * safe) / safe)

    return snap


def grid_rules(model: nn.Module, grid: WeightGrid) -> dict[str, tuple[nn.Module, Callable[[torch.Tensor], torch.Tensor]]]:
    """{name: (module, the rounding of its weight)} for every Linear and Embedding of `model` on `grid`."""
    folds = grid.folds(model) if grid.folds else {}
    return {
        name: (m, _through_norm(grid.rule_for(m), folds[m]) if m in folds else grid.rule_for(m))
        for name, m in grid_modules(model).items()
    }


def put_on_grid(model: nn.Module, grid: WeightGrid) -> int:
    """Train `model` on `grid`: each Linear and Embedding weight is seen snapped (straight-through gradient).
    Returns how many weights. `bake` writes them snapped for good."""
    from torch.nn.utils import parametrize

    rules = grid_rules(model, grid).values()
    for m, rule in rules:
        parametrize.register_parametrization(m, "weight", _OnGrid(rule), unsafe=True)
    return len(rules)


def bake(model: nn.Module) -> None:
    """Replace each grid parametrization by its snapped weight (what `save_pretrained` then writes)."""
    from torch.nn.utils import parametrize

    for m in model.modules():
        if parametrize.is_parametrized(m, "weight"):
            parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)


def off_grid(model: nn.Module, grid: WeightGrid) -> list[str]:
    """The Linear / Embedding weights of `model` that `grid` would move (empty: every one is a grid point, to the
    float ulp a recomputed scale can differ by)."""
    rules = grid_rules(model, grid)
    return [name for name, (m, rule) in rules.items() if not torch.allclose(rule(m.weight.detach()), m.weight.detach(), rtol=1e-6, atol=0)]
