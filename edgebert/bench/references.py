"""Which item each bench item is compared to.

- `--reference ITEM` (or its label; default: the first item): one reference for the whole run, added to the run if
  it is not an item already. Retention, speed-up and compression of every item are against it.
- `--reference parent`: each export is compared with the model directory it was exported from (its manifest's
  `parent`), added to the run when it is not an item already; a model directory is its own reference. This is the
  fidelity view of a run that mixes families and tasks: every export against what its own model computes.
  An export whose parent is not on disk, and a bare .onnx/.tflite file (no parent), is a failed item saying so.
"""

from __future__ import annotations

from pathlib import Path

from edgebert.bench.items import ItemSpec, resolve_item
from edgebert.modeldir import read_manifest

PARENT = "parent"


def resolve_references(specs: list[ItemSpec], reference: str | None, tokenizer: str | None, pooling: str) -> dict[str, str]:
    """Each item's label -> its reference's label. May insert items into `specs` (the reference, or parents)."""
    if reference == PARENT:
        return _parents(specs)
    label = _run_reference(specs, reference, tokenizer, pooling)
    return {s.label: label for s in specs}


def _run_reference(specs: list[ItemSpec], reference: str | None, tokenizer: str | None, pooling: str) -> str:
    """The label of the run's one reference: an item's label, an item's path, or a new item inserted first."""
    if reference is None:
        return specs[0].label
    if any(s.label == reference for s in specs):
        return reference
    ref = resolve_item(reference, tokenizer=tokenizer, pooling=pooling)
    same = [s for s in specs if (s.path, s.kind, s.torch_int8) == (ref.path, ref.kind, False)]
    if same:
        return same[0].label
    if ref.label in {s.label for s in specs}:
        ref.label = f"{ref.label} (reference)"
    specs.insert(0, ref)
    return ref.label


def _parents(specs: list[ItemSpec]) -> dict[str, str]:
    """Exports against their parent model dir (found among the items or inserted before the export); model dirs
    against themselves; what has no parent on disk is marked unsupported."""
    references: dict[str, str] = {}
    for spec in list(specs):
        if spec.kind == "pytorch":
            references[spec.label] = spec.label if not spec.torch_int8 else _model_dir_label(specs, spec.path)
            continue
        parent = _parent_path(spec)
        if parent is None:
            spec.unsupported = spec.unsupported or (
                f"{spec.label} has no parent model on disk ({'a bare file' if spec.kind != 'export' else 'its edgebert.json parent is missing'}): "
                "--reference parent compares exports with the model they were exported from; bench it with --reference ITEM"
            )
            references[spec.label] = spec.label
            continue
        label = _model_dir_label(specs, str(parent))
        if label is None:
            added = resolve_item(str(parent))
            taken = {s.label for s in specs}
            added.label = added.label if added.label not in taken else f"{added.label} (parent)"
            specs.insert(specs.index(spec), added)
            references[added.label] = label = added.label
        references[spec.label] = label
    return references


def _parent_path(spec: ItemSpec) -> Path | None:
    """The model dir an export was made from, if it is still on disk (a relative parent is read from the cwd)."""
    if spec.kind != "export":
        return None
    parent = read_manifest(Path(spec.path)).get("parent")
    if not parent:
        return None
    path = Path(str(parent)).expanduser()
    return path if (path / "config.json").is_file() else None


def _model_dir_label(specs: list[ItemSpec], path: str) -> str | None:
    """The label of the (non torch-int8) PyTorch item at `path`, if the run has one."""
    target = Path(path).resolve()
    return next((s.label for s in specs if s.kind == "pytorch" and not s.torch_int8 and Path(s.path).resolve() == target), None)
