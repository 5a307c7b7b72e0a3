"""Structured pruning that physically removes attention heads and FFN neurons from a transformers model.

Heads go through `edgebert.pruned_heads.narrow_heads`: the query/key/value rows and the attention-output columns of
the pruned heads are cut, and `config.pruned_heads` records them (original head ids per layer), from which edgebert's
loader rebuilds the smaller matrices (`edgebert.modelio.load_weights`). Layers may keep different numbers of heads,
except in a family whose layers share a table with one column a head (MPNet's relative-position bias): there every
layer loses the same heads.

FFN neurons: every layer keeps the SAME number of neurons (its own most important ones) and
`config.intermediate_size` becomes that number. A config holds one intermediate size, so a uniform cut is the
only one that stock classes load without custom code; a global (per-layer-different) FFN cut is refused for that
reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from edgebert.config import HEAD_SCOPES
from edgebert.errors import UserError
from edgebert.families import Family

FFN_SCOPES = ("layer",)
GLOBAL_FFN_REFUSAL = (
    "--ffn-scope global is not supported: it would give each layer a different FFN width, which a transformers "
    "config cannot express (one intermediate_size), so stock transformers classes could not load the model; "
    "use --ffn-scope layer (each layer keeps its own most important neurons)"
)


@dataclass
class HeadLayout:
    """Which original heads each layer module still has (ids in the unpruned numbering).

    One entry per layer *module*: a layer shared by several passes (published ALBERT) is one entry, scored over all
    its passes, pruned once and counted once (`config.pruned_heads` keys are module indices there too)."""

    original_heads: int
    remaining: list[list[int]]
    tied_by: tuple[str, ...] = ()  # the family's `head_tables`: every layer loses the same heads


    @classmethod
    def of(cls, config: Any, family: Family) -> HeadLayout:
        heads_field = family.size_fields[2]
        total = int(getattr(config, heads_field))
        layers = family.distinct_layers(config)
        pruned = {int(k): {int(h) for h in v} for k, v in (getattr(config, "pruned_heads", None) or {}).items()}
        remaining = [[h for h in range(total) if h not in pruned.get(l, set())] for l in range(layers)]
        return cls(total, remaining, family.head_tables)

    def counts(self) -> list[int]:
        return [len(r) for r in self.remaining]


def check_fraction(name: str, value: float, what: str = "units to remove") -> float:
    """A pruning fraction in [0, 1), or a one-line UserError (`what` names the share in the message)."""
    try:
        value = float(value)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{name} must be a number in [0, 1), got {value!r}") from exc
    if not 0.0 <= value < 1.0:  # NaN fails this too
        raise UserError(f"{name} must be a fraction in [0, 1) (the share of {what}), got {value}")
    return value


def _round(x: float) -> int:
    """Round half up (Python's round() rounds 0.5 to 0, which would make 'remove 25 % of 2 heads' a no-op)."""
    import math

    return math.floor(x + 0.5)


def layer_normalized(scores: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each layer's head scores divided by their L2 norm (Michel et al.), for ranking heads across layers."""
    return [s / s.norm().clamp(min=1e-20) for s in scores]


def _order(scores: torch.Tensor) -> list[int]:
    """Indices from least to most important; ties broken by index (deterministic)."""
    keyed = sorted(range(len(scores)), key=lambda i: (float(scores[i]), i))
    return keyed


def select_heads(scores: list[torch.Tensor], layout: HeadLayout, fraction: float, scope: str) -> dict[int, list[int]]:
    """Original head ids to prune per layer: the least important `fraction` of the current heads.

    scope 'layer': round(fraction * heads) per layer; a layer that would lose all its heads is a UserError.
    scope 'global': round(fraction * all heads) over the whole model, ranked by layer-normalised scores
    (Michel et al.), never taking a layer's most important head, so every layer keeps at least one.
    """
    if scope not in HEAD_SCOPES:
        raise UserError(f"--head-scope must be one of {', '.join(HEAD_SCOPES)}, got {scope!r}")
    counts = layout.counts()
    plan: dict[int, list[int]] = {}
    if fraction <= 0:
        return plan
    if layout.tied_by:
        return _select_tied(scores, layout, fraction)
    if scope == "layer":
        for layer, (s, n) in enumerate(zip(scores, counts)):
            k = _round(fraction * n)
            if k >= n:
                raise UserError(
                    f"--prune-heads {fraction} would remove all {n} heads of layer {layer}; keep at least 1 "
                    f"(use a fraction below {(n - 0.5) / n:.3f} or --head-scope global)"
                )
            if k:
                plan[layer] = sorted(layout.remaining[layer][i] for i in _order(s)[:k])
        return plan
    total = sum(counts)
    k = _round(fraction * total)
    if k > total - len(counts):
        raise UserError(
            f"--prune-heads {fraction} would remove {k} of {total} heads, but every one of the {len(counts)} layers "
            f"keeps at least 1 (at most {total - len(counts)} can go; use a fraction of at most {(total - len(counts)) / total:.3f})"
        )
    normalized = layer_normalized(scores)
    candidates = []
    for layer, s in enumerate(normalized):
        order = _order(s)
        candidates += [(float(s[i]), layer, i) for i in order[:-1]]  # the layer's best head is never a candidate
    candidates.sort()
    for _, layer, i in candidates[:k]:
        plan.setdefault(layer, []).append(layout.remaining[layer][i])
    return {layer: sorted(v) for layer, v in sorted(plan.items())}


def _select_tied(scores: list[torch.Tensor], layout: HeadLayout, fraction: float) -> dict[int, list[int]]:
    """The same heads out of every layer (`HeadLayout.tied_by`; either scope): round(fraction * heads) of them, the
    least important by the sum over layers of the layer-normalised scores (Michel et al.)."""
    n = len(layout.remaining[0])
    k = _round(fraction * n)
    if k >= n:
        raise UserError(f"--prune-heads {fraction} would remove all {n} heads of every layer; keep at least 1 "
                        f"(use a fraction below {(n - 0.5) / n:.3f})")  # fmt: skip
    if not k:
        return {}
    total = torch.stack(layer_normalized(scores)).sum(dim=0)
    heads = sorted(layout.remaining[0][i] for i in _order(total)[:k])
    return {layer: list(heads) for layer in range(len(layout.remaining))}


def parse_head_list(spec: str | dict[Any, Any], layout: HeadLayout) -> dict[int, list[int]]:
    """An explicit `{"layer": [head, ...]}` (JSON text, a .json file, or a dict) checked against the model.

    Head ids are the original (unpruned) numbering, as in `config.pruned_heads`.
    """
    if isinstance(spec, dict):
        raw = spec
    else:
        text = str(spec)
        path = Path(text).expanduser()
        if not text.lstrip().startswith("{") and path.is_file():
            text = path.read_text()
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f'--heads-to-prune is not valid JSON ({exc.msg}); expected e.g. {{"0": [1, 2], "3": [0]}}') from exc
    if not isinstance(raw, dict):
        raise UserError('--heads-to-prune must be a JSON object of layer -> list of heads, e.g. {"0": [1, 2]}')
    layers = len(layout.remaining)
    plan: dict[int, list[int]] = {}
    for key, heads in raw.items():
        try:
            layer = int(key)
        except (TypeError, ValueError) as exc:
            raise UserError(f"--heads-to-prune: layer {key!r} is not an integer") from exc
        if not 0 <= layer < layers:
            raise UserError(f"--heads-to-prune: layer {layer} does not exist (the model has layers 0..{layers - 1})")
        if not isinstance(heads, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in heads):
            raise UserError(f"--heads-to-prune: layer {layer} must map to a list of integer head ids, got {heads!r}")
        bad = [h for h in heads if not 0 <= h < layout.original_heads]
        if bad:
            raise UserError(f"--heads-to-prune: layer {layer} has no head {bad[0]} (heads are 0..{layout.original_heads - 1})")
        gone = [h for h in heads if h not in layout.remaining[layer]]
        if gone:
            raise UserError(f"--heads-to-prune: head {gone[0]} of layer {layer} is already pruned")
        unique = sorted(set(heads))
        if len(unique) >= len(layout.remaining[layer]):
            raise UserError(
                f"--heads-to-prune would remove all {len(layout.remaining[layer])} heads of layer {layer}; keep at least 1"
            )
        if unique:
            plan[layer] = unique
    if layout.tied_by and plan and (len(plan) != layers or len({tuple(v) for v in plan.values()}) != 1):
        raise UserError(
            f"--heads-to-prune must name the same heads for each of the {layers} layers: this model's layers share "
            f"{', '.join(layout.tied_by)}, one column a head (or use --prune-heads)"
        )
    return dict(sorted(plan.items()))


def select_ffn(scores: list[torch.Tensor], fraction: float) -> list[list[int]] | None:
    """Per layer, the sorted indices of the neurons to keep: the same count everywhere, each layer its best."""
    if fraction <= 0:
        return None
    sizes = {len(s) for s in scores}
    if len(sizes) != 1:
        raise UserError("the model's layers have different FFN widths; edgebert only prunes uniform FFNs")
    width = sizes.pop()
    keep = width - _round(fraction * width)
    if keep < 1:
        raise UserError(f"--prune-ffn {fraction} would remove all {width} FFN neurons of every layer; keep at least 1")
    if keep == width:
        return None
    return [sorted(_order(s)[width - keep :]) for s in scores]


def apply_head_pruning(model: Any, plan: dict[int, list[int]]) -> None:
    """Physically remove heads (original ids) from `model` (any transformers model of a known family); records
    config.pruned_heads (`edgebert.pruned_heads.narrow_heads`)."""
    from edgebert.families import family_for
    from edgebert.pruned_heads import narrow_heads

    if plan:
        narrow_heads(model.base_model, family_for(model.config.model_type), {int(k): list(v) for k, v in plan.items()})


def apply_ffn_pruning(base_model: torch.nn.Module, family: Family, config: Any, keep: list[list[int]]) -> int:
    """Keep only the `keep[l]` neurons of each layer's FFN (up-projection rows, in both halves when gated;
    down-projection columns)."""
    from transformers.pytorch_utils import prune_linear_layer

    layers = family.layers(base_model)
    widths = {len(k) for k in keep}
    if len(widths) != 1 or len(keep) != len(layers):
        raise ValueError("FFN pruning keeps the same number of neurons in every layer")
    for layer, indices in zip(layers, keep):
        index = torch.tensor(indices, dtype=torch.long)
        rows = torch.cat([index, index + family.module(layer, "ffn_output").in_features]) if family.ffn_gated else index
        family.replace_module(layer, "ffn_input", prune_linear_layer(family.module(layer, "ffn_input"), rows, dim=0))
        family.replace_module(layer, "ffn_output", prune_linear_layer(family.module(layer, "ffn_output"), index, dim=1))
    width = widths.pop()
    setattr(config, family.size_fields[3], width)
    return width


def count_parameters(module: torch.nn.Module) -> int:
    """Distinct parameters (tied weights counted once)."""
    seen, total = set(), 0
    for p in module.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total
