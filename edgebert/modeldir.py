"""The on-disk contract of a model directory: the `edgebert.json` manifest, the pooling the model uses and the
sentence-transformers files beside the weights. Every verb reads and writes model and export directories through it
(loading the weights safely is `edgebert.modelio`'s job, which reads the pooling and the manifest from here).

A model directory is what `save_pretrained` writes (config.json, model.safetensors, tokenizer files), the
sentence-transformers stack (modules.json, 1_Pooling/config.json, 2_Normalize/, sentence_bert_config.json, ...) and
`edgebert.json`, one manifest schema for every verb (`Manifest`):

    kind      "model" (a directory written by distill, compress, trim or finetune) or "export" (an on-device target)
    step      the verb that wrote it: "distill", "compress", "trim", "finetune" or "export"
    parent    the directory it came from (the teacher of distill, the model of compress / trim / finetune / export)
    parent_name, parent_manifest   the parent's name and its own manifest (None when it has none): the full lineage
    task      what the model computes: "feature-extraction"
    outputs   its outputs: [{"name": "sentence_embedding", "dim": H, "normalized": true}, {"name": "last_hidden_state", "dim": H}]
    recipe    the options that shaped it
    metrics   what was measured: always wall_time_s and model_bytes, plus the step's own measurements
    model     family, architecture, pooling and sizes of the model
    name, created, edgebert_version, schema_version

Step-specific blocks keep their own keys: "distill" (teacher fingerprint and head, corpus, steps, student init),
"pruning" / "healing" / "magnitude" / "parameters" (compress), "vocab_trim" / "parameters" (trim), "finetune" (the
data, the held-out rows, every candidate's score and the one kept), and the export
fields (target, quantization, seq_len, static_shape, inputs, files, tokenizer_files, target_details, parity, host).
Manifests of schema 1 (kind "student"/"model" with `lineage`, exports with `source.path`) are upgraded on read.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from edgebert.errors import UserError
from edgebert.heads import LEGACY_POOLING_KEYS, SentenceStack

MANIFEST = "edgebert.json"
SCHEMA_VERSION = 2
KINDS = ("model", "export")
STEPS = ("distill", "compress", "trim", "finetune", "export")
FEATURE_EXTRACTION = "feature-extraction"
# The pooling modes edgebert reproduces (edgebert.heads computes them) and sentence-transformers' flag for each.
POOLING_FLAGS = {mode: flag for flag, mode in LEGACY_POOLING_KEYS}
POOLING_MODES = tuple(POOLING_FLAGS)

# sentence-transformers' files and module dirs beside the weights (those edgebert writes or carries over)
ST_MODULES = "modules.json"
ST_FILES = (ST_MODULES, "sentence_bert_config.json", "config_sentence_transformers.json")
ST_DIRS = ("1_Pooling", "2_Normalize")
ST_PREFIX = "sentence_transformers.models."
ST_STACK = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize"}  # module type -> path


class Manifest(TypedDict, total=False):
    """`edgebert.json` (see the module docstring); step-specific blocks are further keys."""

    schema_version: int
    kind: str
    step: str
    name: str
    parent: str | None
    parent_name: str | None
    parent_manifest: dict[str, Any] | None
    task: str
    outputs: list[dict[str, Any]]
    recipe: dict[str, Any]
    metrics: dict[str, Any]
    model: dict[str, Any]
    created: str
    edgebert_version: str


# ------------------------------------------------------------------------------------------------ the manifest


def embedding_outputs(hidden: int) -> list[dict[str, Any]]:
    """The outputs of a sentence embedder of width `hidden` (a model dir's `outputs`)."""
    return [
        {"name": "sentence_embedding", "dim": int(hidden), "normalized": True},
        {"name": "last_hidden_state", "dim": int(hidden)},
    ]


def classifier_outputs(id2label: dict[Any, str]) -> list[dict[str, Any]]:
    """The output of a sequence classifier (a model dir's or export's `outputs`): logits [batch, num_labels] with the
    label of each column."""
    labels = [str(id2label[k]) for k in sorted(id2label, key=int)]
    return [{"name": "logits", "shape": ["batch", len(labels)], "dtype": "float32", "labels": labels}]


def rewritten_outputs(task: str, config: Any) -> list[dict[str, Any]]:
    """The `outputs` of a model dir a verb rewrote (compress, trim): what its kept head computes."""
    if task == "text-classification":
        return classifier_outputs(config.id2label)
    if task == "token-classification":
        labels = [str(config.id2label[k]) for k in sorted(config.id2label, key=int)]
        return [{"name": "logits", "shape": ["batch", "seq", len(labels)], "dtype": "float32", "labels": labels}]
    return embedding_outputs(config.hidden_size)


def new_manifest(
    kind: str, step: str, name: str, parent: str | Path | None, parent_manifest: dict[str, Any] | None, *,
    parent_name: str | None = None, recipe: dict[str, Any], model: dict[str, Any], outputs: list[dict[str, Any]],
    metrics: dict[str, Any] | None = None, task: str = FEATURE_EXTRACTION,
) -> Manifest:  # fmt: skip
    """The common fields of every manifest; the caller adds its step's blocks."""
    import datetime as dt

    from edgebert import __version__

    _check_kind_step(kind, step)
    return Manifest(
        schema_version=SCHEMA_VERSION,
        kind=kind,
        step=step,
        name=name,
        parent=str(parent) if parent is not None else None,
        parent_name=parent_name or ((parent_manifest or {}).get("name")) or (Path(parent).name if parent else None),
        parent_manifest=parent_manifest or None,
        task=task,
        outputs=outputs,
        recipe=recipe,
        metrics={"wall_time_s": None, "model_bytes": None, **(metrics or {})},
        model=model,
        created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        edgebert_version=__version__,
    )


def _check_kind_step(kind: Any, step: Any) -> None:
    if kind not in KINDS or step not in STEPS:
        raise ValueError(f"a manifest needs kind in {KINDS} and step in {STEPS}, got kind {kind!r}, step {step!r}")


def read_manifest(directory: Path) -> Manifest:
    """The manifest of `directory` in the current schema (older ones upgraded), or an empty dict when it has none."""
    path = Path(directory) / MANIFEST
    if not path.exists():
        return Manifest()
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg}); delete it or re-create the directory") from exc
    if not isinstance(raw, dict):
        raise UserError(f"{path} must hold a JSON object, got a JSON {type(raw).__name__}; delete it or re-create the directory")
    return upgrade_manifest(raw)


def write_manifest(directory: Path, manifest: Manifest | dict[str, Any]) -> Path:
    """Write `edgebert.json` into `directory` (a temp file, then a rename); NaN or inf is a VerificationError."""
    _check_kind_step(manifest.get("kind"), manifest.get("step"))
    path = Path(directory) / MANIFEST
    body = {**manifest, "schema_version": SCHEMA_VERSION}
    try:
        text = json.dumps(body, indent=2, sort_keys=False, default=str, allow_nan=False)
    except ValueError as exc:
        from edgebert.errors import VerificationError

        where = _first_non_finite(body) or "a value"
        raise VerificationError(f"{where} is NaN or infinite; refusing to write it into {path}") from exc
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)
    if body.get("kind") == "model":  # a model directory is a Hub model: its card says what edgebert did and measured
        from edgebert.model_card import write_model_card

        write_model_card(directory, body)
    return path


def _first_non_finite(value: Any, where: str = "") -> str | None:
    """The dotted key of the first NaN/inf float in a JSON-like value, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "the manifest"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _first_non_finite(item, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


# --------------------------------------------------------------------------------------- schema 1 → schema 2

_LEGACY_STEPS = {"compress": "compress", "trim_vocab": "trim"}
_LEGACY_METRICS = {"wall_time_s": "wall_time_s", "model_bytes": "model_bytes", "stage_times_s": "stage_times_s",
                   "source_model_bytes": "parent_model_bytes"}  # fmt: skip


def upgrade_manifest(raw: dict[str, Any]) -> Manifest:
    """A manifest of any schema in the current one. Schema 1 had kind "student" (distill) or "model" (compress,
    trim) with the provenance in `lineage` (teacher / source, recipe, ...), exports with `source.path`, and the
    wall time and sizes at the top level."""
    if int(raw.get("schema_version") or 1) >= SCHEMA_VERSION:
        return Manifest(**raw)  # type: ignore[typeddict-item]
    m = dict(raw)
    lineage, source = m.pop("lineage", None) or {}, m.pop("source", None) or {}
    if m.get("kind") == "export" or "target" in m:
        common = {"kind": "export", "step": "export", "parent": source.get("path"), "parent_manifest": source.get("manifest")}
    elif m.get("kind") == "student" or "teacher" in lineage:
        rest = {k: v for k, v in lineage.items() if k not in ("teacher", "teacher_name", "recipe")}
        common = {"kind": "model", "step": "distill", "parent": lineage.get("teacher"), "parent_name": lineage.get("teacher_name"),
                  "recipe": lineage.get("recipe") or {}, "distill": rest}  # fmt: skip
    else:
        common = {"kind": "model", "step": _LEGACY_STEPS.get(lineage.get("step"), lineage.get("step")), "parent": lineage.get("source"),
                  "parent_name": lineage.get("source_name"), "parent_manifest": lineage.get("source_manifest"),
                  "recipe": lineage.get("recipe") or {}}  # fmt: skip
    m.update(common)
    metrics = dict(m.get("metrics") or {})
    for old, new in _LEGACY_METRICS.items():
        if old in m:
            metrics[new] = m.pop(old)
    m["metrics"] = metrics
    if isinstance(m.get("parent_manifest"), dict):
        m["parent_manifest"] = upgrade_manifest(m["parent_manifest"])
    m.setdefault("parent_name", Path(str(m["parent"])).name if m.get("parent") else None)
    m.setdefault("task", FEATURE_EXTRACTION)
    hidden = (m.get("model") or {}).get("hidden_size")
    if "outputs" not in m and hidden:
        m["outputs"] = embedding_outputs(hidden)
    m["schema_version"] = SCHEMA_VERSION
    return Manifest(**m)  # type: ignore[typeddict-item]


# ------------------------------------------------------------------------------------------------- pooling


@dataclass(frozen=True)
class Pooling:
    """How the model turns token states into a sentence vector.

    mode: one of POOLING_MODES. config: the full sentence-transformers Pooling config it was read from (or the one
    that writes this mode). normalize: whether an L2 Normalize follows (edgebert's embedder always normalises; a
    sentence-transformers stack without Normalize gives the same cosines). source: where it was found."""

    mode: str
    config: dict[str, Any] = field(default_factory=dict)
    normalize: bool = True
    source: str = "family default"

    @classmethod
    def of_mode(cls, mode: str, hidden: int | None = None, source: str = "family default") -> Pooling:
        """The pooling `mode` with the sentence-transformers config that writes it."""
        if mode not in POOLING_MODES:
            raise UserError(f"pooling '{mode}' is not supported; expected one of {', '.join(POOLING_MODES)}")
        config: dict[str, Any] = {"word_embedding_dimension": hidden} if hidden else {}
        config.update({flag: name == mode for name, flag in POOLING_FLAGS.items()})
        return cls(mode, config, True, source)

    def st_config(self, hidden: int) -> dict[str, Any]:
        """The 1_Pooling/config.json of this pooling for a transformer of width `hidden`."""
        return {**self.config, "word_embedding_dimension": int(hidden)}


def resolve_stack(model_dir: Path, default_mode: str, manifest: dict[str, Any] | None = None) -> SentenceStack:
    """The sentence vector the model in `model_dir` computes: its sentence-transformers stack (modules.json: every
    pooling mode, Dense, Normalize; a lone 1_Pooling/config.json), else its manifest's `model.pooling`, else
    `default_mode` (the family's) with L2 normalisation. UserError (one line) for what edgebert cannot reproduce."""
    from edgebert import heads

    model_dir = Path(model_dir)
    stack = heads.read_sentence_stack(model_dir)
    if stack is not None:
        return stack
    lone = model_dir / ST_DIRS[0] / "config.json"
    if lone.is_file():
        return heads.SentenceStack(heads.read_pooling_config(lone), source="sentence-transformers")
    manifest = read_manifest(model_dir) if manifest is None else manifest
    mode = (manifest.get("model") or {}).get("pooling")
    if mode:
        if mode not in POOLING_MODES:
            raise UserError(f"{model_dir / MANIFEST} names pooling '{mode}', not one of {', '.join(POOLING_MODES)}; re-create the directory")
        return heads.default_stack(mode, source="manifest")
    return heads.default_stack(default_mode, source="family default")


def resolve_pooling(model_dir: Path, default_mode: str, manifest: dict[str, Any] | None = None) -> Pooling:
    """The one pooling mode of the model in `model_dir`, for the steps that train or rewrite its encoder (distill,
    compress, trim): UserError (one line) when its stack is more than one pooling mode and a Normalize (several modes
    concatenated, Dense layers), which `edgebert export` reproduces but those steps do not yet."""
    model_dir = Path(model_dir)
    stack = resolve_stack(model_dir, default_mode, manifest)
    if stack.dense or len(stack.pooling) != 1:
        raise UserError(
            f"{model_dir}: its sentence-transformers stack ({' + '.join(stack.pooling)} pooling, {len(stack.dense)} Dense) "
            "is reproduced by `edgebert export` but not yet by distill / compress / trim; use a model with one pooling mode and no Dense"
        )
    if stack.source != "sentence-transformers":
        return Pooling.of_mode(stack.pooling[0], source=stack.source)
    return Pooling(stack.pooling[0], _st_pooling_config(model_dir), stack.normalize, stack.source)


def _st_pooling_config(model_dir: Path) -> dict[str, Any]:
    """The Pooling module's config.json as written (the path modules.json gives it, else 1_Pooling)."""
    path = ST_DIRS[0]
    if (model_dir / ST_MODULES).is_file():
        modules = _read_json(model_dir / ST_MODULES, "the sentence-transformers module list")
        path = next((str(m.get("path", "")) for m in modules if str(m.get("type", "")).endswith("Pooling")), path)
    return _read_json_object(model_dir / path / "config.json", "the sentence-transformers Pooling config")


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} ({what}) is not valid JSON ({exc.msg}); re-save the model") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path} ({what}: {type(exc).__name__}); re-save the model") from exc


def _read_json_object(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise UserError(f"{path} ({what}) is missing; re-save the model with sentence-transformers")
    value = _read_json(path, what)
    if not isinstance(value, dict):
        raise UserError(f"{path} ({what}) must hold a JSON object; re-save the model with sentence-transformers")
    return value


# ----------------------------------------------------------------------------------- saving a model directory


def save_model_dir(
    directory: Path, model: Any, tokenizer: Any, parent: Path, *, pooling: Pooling | None = None, hidden: int = 0,
    seq_len: int | None = None,
) -> None:  # fmt: skip
    """Weights (safetensors), tokenizer and sentence-transformers files of a model derived from `parent`.
    Without `pooling` the head is the parent's: its sentence-transformers files are carried over unchanged (none
    when it has none); with it, a new stack is written (see `write_sentence_transformers`)."""
    directory = Path(directory)
    save_weights(model, directory)
    tokenizer.save_pretrained(str(directory))
    if pooling is None:
        _copy_sentence_transformers(Path(parent), directory)
    else:
        write_sentence_transformers(directory, pooling, hidden, Path(parent), seq_len)


def save_weights(model: Any, directory: Path) -> None:
    """config.json and model.safetensors as the stock transformers class loads them: a head-pruned model's attention
    at its full shapes, the removed heads exact zeros (`edgebert.pruned_heads.widened_state_dict`), with
    `config.pruned_heads` naming them for edgebert's loader, which narrows them again for the exports."""
    from edgebert.pruned_heads import pruned_plan, widened_state_dict

    state = widened_state_dict(model) if pruned_plan(getattr(model, "config", None)) else None
    model.save_pretrained(Path(directory), safe_serialization=True, state_dict=state)


def write_sentence_transformers(directory: Path, pooling: Pooling, hidden: int, parent: Path, seq_len: int | None) -> None:
    """A new sentence-transformers stack (Transformer, Pooling, Normalize) for a transformer of width `hidden`:
    `pooling`'s config at that width and sentence_bert_config.json with max_seq_length `seq_len` under the
    parent's own inference settings (e.g. its max_seq_length)."""
    modules = [
        {"idx": i, "name": str(i), "path": path, "type": ST_PREFIX + kind} for i, (kind, path) in enumerate(ST_STACK.items())
    ]
    _write_json(directory / ST_MODULES, modules)
    (directory / ST_STACK["Normalize"]).mkdir(exist_ok=True)
    (directory / ST_STACK["Pooling"]).mkdir(exist_ok=True)
    _write_json(directory / ST_STACK["Pooling"] / "config.json", pooling.st_config(hidden))
    st_config: dict[str, Any] = {"max_seq_length": seq_len, "do_lower_case": False}
    parent_config = Path(parent) / ST_FILES[1]
    if parent_config.exists():
        try:
            st_config.update(json.loads(parent_config.read_text()))
        except json.JSONDecodeError:
            pass  # an unreadable parent config keeps the defaults
    _write_json(directory / ST_FILES[1], st_config)


def _copy_sentence_transformers(parent: Path, directory: Path) -> None:
    """Copy `parent`'s sentence-transformers files and module dirs (those present) into `directory`, unchanged."""
    for name in ST_FILES:
        if (parent / name).is_file():
            shutil.copy2(parent / name, directory / name)
    names = set(ST_DIRS)
    if (parent / ST_MODULES).is_file():
        modules = _read_json(parent / ST_MODULES, "the sentence-transformers module list")
        names |= {str(m.get("path") or "") for m in modules if isinstance(m, dict)} - {""}
    for name in sorted(names):
        if (parent / name).is_dir():
            shutil.copytree(parent / name, directory / name, dirs_exist_ok=True)


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")


def weights_bytes(directory: Path) -> int:
    """Bytes of the safetensors weights in `directory`."""
    return sum(p.stat().st_size for p in Path(directory).glob("*.safetensors"))
