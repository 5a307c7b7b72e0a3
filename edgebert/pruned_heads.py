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

from edgebert.families import Family, family_for, find_path, get_path, set_path


def pruned_plan(config: Any) -> dict[int, set[int]]:
    """{layer module index: original ids of its removed heads} from `config.pruned_heads` (JSON keys are strings)."""
    raw = getattr(config, "pruned_heads", None) or {}
    return {int(k): {int(h) for h in v} for k, v in raw.items() if v}


def narrow_heads(base_model: Any, family: Family, plan: dict[int, Any]) -> None:
    """Remove heads (original ids per layer module) from `base_model`: the query/key/value rows (and those of the
    family's `head_projections`) and attention-output columns of each removed head are cut and the layer's head count
    lowered; a family's `head_tables` lose the removed heads' columns, so such a family must lose the same heads in
    every layer. `config.pruned_heads` records the union with what was removed before (ids stay in the original
    numbering)."""
    config = base_model.config
    done = pruned_plan(config)
    layers = family.layers(base_model)
    new_heads = {int(i): {int(h) for h in heads} - done.get(int(i), set()) for i, heads in plan.items()}
    if family.heads_tied and any(new_heads.values()):
        _check_tied(family, new_heads, done, len(layers))
        keep = _kept_positions(family, layers[0], done.get(0, set()), new_heads[0], 0)  # the same in every layer
        for path in family.head_tables:
            _narrow_table(get_path(base_model, path), keep)
    for index, new in sorted(new_heads.items()):
        if new:
            before = done.get(index, set())
            _narrow_layer(layers[index], family, _kept_positions(family, layers[index], before, new, index))
            done[index] = before | new
    config.pruned_heads = {k: sorted(v) for k, v in sorted(done.items()) if v}


def _check_tied(family: Family, new_heads: dict[int, set[int]], done: dict[int, set[int]], layers: int) -> None:
    """ValueError unless every layer loses the same heads and had lost the same before (`Family.heads_tied`)."""
    wanted = [new_heads.get(i, set()) for i in range(layers)]
    before = [done.get(i, set()) for i in range(layers)]
    if any(w != wanted[0] for w in wanted) or any(b != before[0] for b in before):
        raise ValueError(f"{family.name} models lose the same heads in every layer ({', '.join(family.head_tables)} has one column a head)")


def _kept_positions(family: Family, layer: Any, before: set[int], new: set[int], index: int) -> list[int]:
    """Current positions of the heads a layer keeps when it loses `new` (original ids; `before` already gone)."""
    current = family.heads(family.module(layer, "attention"))
    remaining = [h for h in range(current + len(before)) if h not in before]  # original ids, current order
    keep = [i for i, h in enumerate(remaining) if h not in new]
    if not keep:
        raise ValueError(f"pruning heads {sorted(new)} would leave layer {index} without heads")
    return keep


def _narrow_layer(layer: Any, family: Family, keep: list[int]) -> None:
    """Keep only the heads at positions `keep` in one layer: q/k/v rows (each third of a fused Linear), the rows of
    the family's `head_projections`, the attention output's columns, and the head count (or the `head_parameters`
    slices)."""
    from transformers.pytorch_utils import prune_linear_layer

    attention = family.module(layer, "attention")
    if family.head_parameters:
        _narrow_parameters(attention, family, keep)
        return
    size, heads = family.head_size(attention), family.heads(attention)
    rows = _head_rows(keep, size)
    if family.fused_qkv:
        set_path(attention, family.fused_qkv, prune_linear_layer(get_path(attention, family.fused_qkv), _fused_rows(rows, heads, size), dim=0))
    else:
        for role in ("query", "key", "value"):
            family.replace_module(layer, role, prune_linear_layer(family.module(layer, role), rows, dim=0))
    for path in family.head_projections:
        if (projection := find_path(layer, path)) is not None:
            set_path(layer, path, prune_linear_layer(projection, rows, dim=0))
    family.replace_module(layer, "attention_output", prune_linear_layer(family.module(layer, "attention_output"), rows, dim=1))
    if family.heads_attr:
        setattr(attention, family.heads_attr, len(keep))
    if hasattr(attention, "all_head_size"):
        attention.all_head_size = len(keep) * size


def _head_rows(heads: list[int], size: int) -> Any:
    """The rows (of q / k / v, or columns of the attention output) of the heads at positions `heads`, `size` each."""
    import torch

    return torch.cat([torch.arange(h * size, (h + 1) * size) for h in heads])


def _fused_rows(rows: Any, heads: int, size: int) -> Any:
    """`rows` in each third (query, key, value) of a fused projection of `heads` heads of `size`."""
    import torch

    return torch.cat([rows + part * heads * size for part in range(3)])


def _narrow_parameters(attention: Any, family: Family, keep: list[int]) -> None:
    """Keep the heads at positions `keep` of every `head_parameters` tensor of one layer's attention (XLNet)."""
    import torch

    index = torch.tensor(keep, dtype=torch.long)
    for name, axis in family.head_parameters:
        old = getattr(attention, name)
        setattr(attention, name, torch.nn.Parameter(old.detach().index_select(axis, index).clone(), requires_grad=old.requires_grad))
    setattr(attention, family.heads_attr, len(keep))


def _narrow_table(table: Any, keep: list[int]) -> None:
    """Keep the columns `keep` (one a head) of an Embedding every layer reads."""
    import torch

    table.weight = torch.nn.Parameter(table.weight.detach()[:, keep].clone(), requires_grad=table.weight.requires_grad)
    table.embedding_dim = len(keep)


# ------------------------------------------------------------------ the stored layout: full size, removed heads zero


def widened_state_dict(model: Any) -> dict[str, Any]:
    """The state dict of a head-pruned `model` at the stock architecture's shapes: every removed head's query / key /
    value rows (and bias), `head_projections` rows, attention-output columns, `head_parameters` slices and
    `head_tables` columns present as exact zeros. A stock transformers class built from the same config.json loads it
    and computes the same function (a head whose values and output columns are zero adds exactly nothing); edgebert's
    loader narrows it again (`load_weights`), so what the exporters see is unchanged. `model` itself is not changed."""
    import copy

    plan = pruned_plan(model.config)
    if not plan:
        return model.state_dict()
    wide = copy.deepcopy(model)
    family = family_for(model.config.model_type)
    heads = int(model.config.num_attention_heads)
    layers = family.layers(wide.base_model)
    for index, removed in sorted(plan.items()):
        _widen_layer(layers[index], family, [h for h in range(heads) if h not in removed], heads)
    if family.heads_tied:
        kept = [h for h in range(heads) if h not in plan.get(0, set())]
        for path in family.head_tables:
            _widen_table(get_path(wide.base_model, path), kept, heads)
    return wide.state_dict()


def _widen_layer(layer: Any, family: Family, kept: list[int], heads: int) -> None:
    """Put one narrowed layer back at `heads` heads, the removed ones zero (`kept`: original ids of those it has)."""
    import torch

    attention = family.module(layer, "attention")
    if family.head_parameters:
        index = torch.tensor(kept, dtype=torch.long)
        for name, axis in family.head_parameters:
            setattr(attention, name, torch.nn.Parameter(_scatter(getattr(attention, name).detach(), axis, index, heads)))
        setattr(attention, family.heads_attr, heads)
        return
    size = family.head_size(attention)
    rows = _head_rows(kept, size)
    if family.fused_qkv:
        fused = _fused_rows(rows, heads, size)
        set_path(attention, family.fused_qkv, _widen_linear(get_path(attention, family.fused_qkv), fused, 3 * heads * size, 0))
    else:
        for role in ("query", "key", "value"):
            family.replace_module(layer, role, _widen_linear(family.module(layer, role), rows, heads * size, 0))
    for path in family.head_projections:
        if (projection := find_path(layer, path)) is not None:
            set_path(layer, path, _widen_linear(projection, rows, heads * size, 0))
    family.replace_module(layer, "attention_output", _widen_linear(family.module(layer, "attention_output"), rows, heads * size, 1))
    if family.heads_attr:
        setattr(attention, family.heads_attr, heads)
    if hasattr(attention, "all_head_size"):
        attention.all_head_size = heads * size


def _scatter(value: Any, axis: int, index: Any, size: int) -> Any:
    """`value` placed at `index` along `axis` of zeros whose `axis` has `size` entries."""
    import torch

    shape = list(value.shape)
    shape[axis] = size
    return torch.zeros(shape, dtype=value.dtype).index_copy(axis, index, value)


def _widen_linear(linear: Any, index: Any, size: int, dim: int) -> Any:
    """A Linear whose outputs (dim 0) or inputs (dim 1) are `size` wide, `linear`'s at `index`, the others zero."""
    import torch

    out_features, in_features = (size, linear.in_features) if dim == 0 else (linear.out_features, size)
    wide = torch.nn.Linear(in_features, out_features, bias=linear.bias is not None, dtype=linear.weight.dtype)
    with torch.no_grad():
        wide.weight.copy_(_scatter(linear.weight.detach(), dim, index, size))
        if linear.bias is not None:
            wide.bias.copy_(_scatter(linear.bias.detach(), 0, index, size) if dim == 0 else linear.bias.detach())
    return wide


def _widen_table(table: Any, kept: list[int], heads: int) -> None:
    """Put a head table's columns back at `heads`, the removed ones zero."""
    import torch

    index = torch.tensor(kept, dtype=torch.long)
    table.weight = torch.nn.Parameter(_scatter(table.weight.detach(), 1, index, heads), requires_grad=table.weight.requires_grad)
    table.embedding_dim = heads


def zero_head_elements(config: Any) -> int:
    """How many elements the stock-shaped layout stores for the heads `config.pruned_heads` removes (the zeros a
    narrowed model does not have): the base model built on the meta device (no memory), before and after narrowing."""
    import copy

    import torch
    from transformers import AutoModel

    plan = pruned_plan(config)
    if not plan:
        return 0
    stock = copy.deepcopy(config)
    stock.pruned_heads = {}
    with torch.device("meta"):
        model = AutoModel.from_config(stock)
        full = sum(p.numel() for p in model.parameters())
        narrow_heads(model, family_for(stock.model_type), plan)
    return full - sum(p.numel() for p in model.parameters())


def stored_full_size(model_dir: Any, cls: Any, config: Any) -> bool:
    """Whether the weights in `model_dir` are stored at the stock architecture's shapes (`widened_state_dict`) rather
    than narrowed (how edgebert wrote head-pruned models before): every tensor the stock class `cls` builds for
    `config` has its shape there (built on the meta device: no memory, no initialisation)."""
    import json
    from pathlib import Path

    import torch

    path = Path(model_dir) / "model.safetensors"
    if not path.is_file():
        return False
    with path.open("rb") as fh:
        header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
    with torch.device("meta"):
        built = concrete_class(cls, config)._from_config(config)
    prefix = f"{built.base_model_prefix}."
    bare = lambda key: key.removeprefix(prefix)  # noqa: E731 - a task model's keys and its base model's alike
    stored = {bare(k): list(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    expected = {bare(k): list(v.shape) for k, v in built.state_dict().items()}
    shared = stored.keys() & expected.keys()
    return bool(shared) and all(stored[k] == expected[k] for k in shared)


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
    Narrowed.edgebert_narrowed = True  # its constructor narrows (`new_like`)
    return Narrowed


def new_like(model: Any, config: Any) -> Any:
    """A new (randomly initialised) model of `model`'s class for `config`, with the heads `config.pruned_heads` names
    narrowed as `model`'s are: a stock class (loaded at the stock shapes, then narrowed) is built whole and narrowed
    here; edgebert's narrowing subclass (`with_pruned_heads`) narrows in its own constructor."""
    import copy

    plan = pruned_plan(config)
    if not plan or getattr(type(model), "edgebert_narrowed", False):
        return type(model)(config)
    stock = copy.deepcopy(config)
    stock.pruned_heads = {}
    new = type(model)(stock)
    narrow_heads(new.base_model, family_for(stock.model_type), plan)
    return new


def build_from_config(cls: Any, config: Any, **kwargs: Any) -> Any:
    """A new (randomly initialised) model of `config`, pruned heads included (`cls` may be an Auto class)."""
    built = with_pruned_heads(cls, config)
    if hasattr(built, "_model_mapping"):  # an Auto class: no heads to narrow
        return built.from_config(config, **kwargs)
    return built._from_config(config, **kwargs)
