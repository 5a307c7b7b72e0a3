"""Attention heads removed physically, and models that carry them: `config.pruned_heads` (original head ids per
layer module) and query/key/value/output matrices with only the kept heads' rows and columns.

transformers 4 did this itself (`prune_heads`, and `from_pretrained` rebuilt the shapes from `config.pruned_heads`);
transformers 5 removed both, while its attention code still reshapes by head size (`view(..., -1, head_size)`), so a
narrowed layer runs unchanged. This module is edgebert's one copy of both halves: `narrow_heads` cuts heads out of a
built model, `with_pruned_heads` makes a transformers class that builds the narrowed shapes before its weights load
(every edgebert loader goes through it: `edgebert.modelio.load_weights`). A head-pruned directory therefore loads
in edgebert and in every export; transformers' own `from_pretrained` refuses its smaller matrices.
"""

from __future__ import annotations

from typing import Any

from edgebert.families import Family, family_for


def pruned_plan(config: Any) -> dict[int, set[int]]:
    """{layer module index: original ids of its removed heads} from `config.pruned_heads` (JSON keys are strings)."""
    raw = getattr(config, "pruned_heads", None) or {}
    return {int(k): {int(h) for h in v} for k, v in raw.items() if v}


def narrow_heads(base_model: Any, family: Family, plan: dict[int, Any]) -> None:
    """Remove heads (original ids per layer module) from `base_model`: the query/key/value rows and attention-output
    columns of each removed head are cut and the layer's head count lowered; `config.pruned_heads` records the union
    with what was removed before (ids stay in the original numbering)."""
    import torch
    from transformers.pytorch_utils import prune_linear_layer

    config = base_model.config
    done = pruned_plan(config)
    layers = family.layers(base_model)
    for index, heads in sorted(plan.items()):
        before = done.get(int(index), set())
        new = {int(h) for h in heads} - before
        if not new:
            continue
        layer = layers[int(index)]
        attention = family.module(layer, "attention")
        size, current = int(attention.attention_head_size), family.heads(attention)
        remaining = [h for h in range(current + len(before)) if h not in before]  # original ids, current order
        keep = [i for i, h in enumerate(remaining) if h not in new]
        if not keep:
            raise ValueError(f"pruning heads {sorted(new)} would leave layer {index} without heads")
        rows = torch.cat([torch.arange(i * size, (i + 1) * size) for i in keep])
        for role in ("query", "key", "value"):
            family.replace_module(layer, role, prune_linear_layer(family.module(layer, role), rows, dim=0))
        family.replace_module(layer, "attention_output", prune_linear_layer(family.module(layer, "attention_output"), rows, dim=1))
        setattr(attention, family.heads_attr, len(keep))
        if hasattr(attention, "all_head_size"):
            attention.all_head_size = len(keep) * size
        done[int(index)] = before | new
    config.pruned_heads = {k: sorted(v) for k, v in sorted(done.items()) if v}


def concrete_class(cls: Any, config: Any) -> Any:
    """The model class an Auto class (`AutoModel`, `AutoModelForMaskedLM`, ...) builds for `config`; others as they are."""
    mapping = getattr(cls, "_model_mapping", None)
    return mapping[type(config)] if mapping is not None else cls


def with_pruned_heads(cls: Any, config: Any) -> Any:
    """`cls` (or the class its Auto class builds for `config`), made to build the narrowed attention of
    `config.pruned_heads` right after its own constructor, so that `from_pretrained` loads the smaller matrices."""
    plan = pruned_plan(config)
    if not plan:
        return cls
    base_cls = concrete_class(cls, config)
    family = family_for(config.model_type)

    class Narrowed(base_cls):  # type: ignore[misc, valid-type]
        def __init__(self, model_config: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(model_config, *args, **kwargs)
            wanted = pruned_plan(model_config)
            model_config.pruned_heads = {}
            narrow_heads(self.base_model, family, wanted)

    Narrowed.__name__ = Narrowed.__qualname__ = base_cls.__name__  # saved `architectures` name the stock class
    return Narrowed


def build_from_config(cls: Any, config: Any, **kwargs: Any) -> Any:
    """A new (randomly initialised) model of `config`, pruned heads included (`cls` may be an Auto class)."""
    built = with_pruned_heads(cls, config)
    if hasattr(built, "_model_mapping"):  # an Auto class: no heads to narrow
        return built.from_config(config, **kwargs)
    return built._from_config(config, **kwargs)
