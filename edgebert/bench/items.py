"""What a bench ITEM is, and how to open one: a tokenizer plus a `Runner` in the item's own runtime.

An ITEM on the command line is one of
- a model directory (config.json + weights + tokenizer): run in PyTorch; `--torch-int8` adds a second item,
  the same model after `torch.ao.quantization.quantize_dynamic` (int8 `nn.Linear` weights);
- an export directory (`edgebert.json` with `kind: export`): run by its target's own runner
  (`edgebert.targets.get_exporter(target).load_runner`: onnxruntime, the LiteRT interpreter, TF.js in Node);
- a bare `.onnx` or `.tflite` file plus `--tokenizer DIR` (or tokenizer files beside it), so models made
  elsewhere run on the same footing; outputs are `sentence_embedding` when present, otherwise the rank-3
  hidden states pooled with `--pooling` (mean by default) and L2-normalised;
- `default`: the packaged teacher (all-MiniLM-L6-v2).
Any item may be written `LABEL=ITEM` to name it in the report.

Every item has a task (`edgebert.heads` tasks): an export's is its manifest's, a model dir's its head's (config.json
`architectures`; a masked-LM dir is an encoder unless an export in the run is fill-mask, as `export` does), a bare
file's feature-extraction. An item whose task is not its reference's (e.g. the embeddings-only export of a
classifier) lacks the reference's head: it is a failed item saying so, never a 100 % retention. Which item is an
item's reference is `edgebert.bench.references`'s.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgebert import buckets
from edgebert.errors import UserError
from edgebert.heads import FEATURE_EXTRACTION, FILL_MASK, TASKS
from edgebert.modeldir import MANIFEST, POOLING_MODES, read_manifest
from edgebert.targets.base import INPUT_NAMES, Runner

KINDS = ("pytorch", "export", "onnx", "tflite")
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "spiece.model",
    "vocab.json",
    "merges.txt",
)
MODEL_DIR_FILES = ("config.json", "model.safetensors", "pytorch_model.bin")


@dataclass
class ItemSpec:
    """One thing to benchmark, as resolved from the command line (cheap: nothing is loaded)."""

    label: str
    path: str
    kind: str  # one of KINDS
    torch_int8: bool = False
    tokenizer: str | None = None  # bare files only
    pooling: str = "mean"  # bare files without a sentence_embedding output
    target: str = ""  # export dirs: onnx | tflite | tfjs
    quantization: str = "none"
    unsupported: str | None = None  # why edgebert cannot run this item: reported as a failed item, the others still run
    task: str = FEATURE_EXTRACTION  # what the item computes (edgebert.heads.TASKS): its outputs and its task metric

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ItemSpec:
        return cls(**data)


@dataclass
class OpenItem:
    """An item loaded for measuring: its tokenizer, what it ships, and a factory of runners per thread count."""

    spec: ItemSpec
    tokenizer: Any
    target: str  # pytorch | onnx | tflite | tfjs
    runtime: str
    quantization: str
    static_seq_len: int | None
    model_bytes: int
    files: dict[str, int]
    tokenizer_bytes: int
    params: int | None
    params_source: str
    make_runner: Any  # Callable[[int], Runner]
    runs_out_of_process: bool = False  # the runtime lives in another process (TF.js in Node)
    task: str = FEATURE_EXTRACTION
    id2label: dict[int, str] | None = None  # classifiers: the label of each logits column
    notes: list[str] = field(default_factory=list)
    buckets: tuple[int, ...] = ()  # static-shape items: the lengths it takes (edgebert.buckets); () = dynamic

    def pad_length(self, tokens: int) -> int | None:
        """The length an input of `tokens` tokens is padded to: the smallest bucket that holds it (None: dynamic)."""
        return buckets.pick(tokens, self.buckets) if self.buckets else None

    def describe(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "runtime": self.runtime,
            "quantization": self.quantization,
            "static_seq_len": self.static_seq_len,
            "buckets": list(self.buckets),
            "model_bytes": self.model_bytes,
            "files": self.files,
            "tokenizer_bytes": self.tokenizer_bytes,
            "params": self.params,
            "params_source": self.params_source,
            "task": self.task,
            **({"labels": [self.id2label[k] for k in sorted(self.id2label)]} if self.id2label else {}),
            "notes": self.notes,
        }


# ----------------------------------------------------------------------------------------- resolving


def parse_items(
    texts: list[str],
    torch_int8: bool = False,
    tokenizer: str | None = None,
    pooling: str = "mean",
) -> list[ItemSpec]:
    """ItemSpecs for the command-line ITEMs (UserError on anything that cannot be an item); labels made unique."""
    if not texts:
        raise UserError("give at least one ITEM: a model dir, an export dir, or a .onnx/.tflite file")
    specs: list[ItemSpec] = []
    for text in texts:
        spec = resolve_item(text, tokenizer=tokenizer, pooling=pooling)
        specs.append(spec)
        if torch_int8 and spec.kind == "pytorch":
            specs.append(
                ItemSpec(
                    label=f"{spec.label} torch-int8",
                    path=spec.path,
                    kind="pytorch",
                    torch_int8=True,
                    quantization="int8-dynamic",
                    target="pytorch",
                    unsupported=spec.unsupported,
                    task=spec.task,
                )
            )
    seen: dict[str, int] = {}
    for spec in specs:
        count = seen.get(spec.label, 0)
        seen[spec.label] = count + 1
        if count:
            spec.label = f"{spec.label}#{count + 1}"
    return specs


def resolve_item(text: str, tokenizer: str | None = None, pooling: str = "mean") -> ItemSpec:
    """One ITEM string (`[LABEL=]PATH`, or `default`) to an ItemSpec, validated without loading anything."""
    label, target = _split_label(text)
    if target == "default":
        from edgebert.sources import default_model_dir

        path = default_model_dir()
        return ItemSpec(label=label or "teacher", path=str(path), kind="pytorch", target="pytorch")
    path = Path(target).expanduser()
    if not path.exists():
        raise UserError(f"item {target} does not exist; pass a model dir, an export dir, or a .onnx/.tflite file")
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix not in (".onnx", ".tflite"):
            raise UserError(f"item {path} is a {suffix or 'suffix-less'} file; only .onnx and .tflite files can be benched")
        tok = Path(tokenizer).expanduser() if tokenizer else path.parent
        if not tok.is_dir() or not any((tok / f).exists() for f in ("tokenizer.json", "vocab.txt", "tokenizer_config.json")):
            raise UserError(f"item {path} needs a tokenizer: pass --tokenizer DIR (a dir with tokenizer.json or vocab.txt)")
        if pooling not in POOLING_MODES:
            raise UserError(f"--pooling {pooling} is not one of {', '.join(POOLING_MODES)}")
        return ItemSpec(
            label=label or (path.parent.name if path.stem == "model" else path.stem),
            path=str(path.absolute()),
            kind=suffix[1:],
            tokenizer=str(tok.absolute()),
            pooling=pooling,
            target=suffix[1:],
            quantization="unknown",
        )
    manifest = read_manifest(path)
    if manifest.get("kind") == "export":
        from edgebert.targets import TARGETS

        tgt = str(manifest.get("target", ""))
        if tgt not in TARGETS:
            raise UserError(f"export dir {path} has target '{tgt}' in {MANIFEST}; expected one of {', '.join(TARGETS)}")
        for name in manifest.get("files", {}):
            if not (path / name).exists():
                raise UserError(f"export dir {path} is incomplete: {name} listed in {MANIFEST} is missing; re-export it")
        return ItemSpec(
            label=label or path.name,
            path=str(path.absolute()),
            kind="export",
            target=tgt,
            quantization=str(manifest.get("quantization", "none")),
            task=str(manifest.get("task") or FEATURE_EXTRACTION),
        )
    if (path / "config.json").exists():
        from edgebert.modelio import inspect_model_dir

        task, unsupported = FEATURE_EXTRACTION, None
        try:
            config, _ = inspect_model_dir(path)  # a model edgebert cannot run (family, missing weights) is a failed item, not an abort
            task = _model_dir_task(path, config)
        except UserError as exc:
            unsupported = str(exc)
        name = manifest.get("name") or (path.parent.name if path.name == "model" else path.name)
        return ItemSpec(
            label=label or name, path=str(path.absolute()), kind="pytorch", target="pytorch", unsupported=unsupported, task=task
        )
    loose = sorted(p.name for p in path.glob("*.onnx")) + sorted(p.name for p in path.glob("*.tflite"))
    hint = f"; to bench {loose[0]}, pass the file itself with --tokenizer" if loose else ""
    raise UserError(f"item {path} is neither a model dir (no config.json) nor an export dir (no {MANIFEST}){hint}")


def _model_dir_task(path: Path, config: dict[str, Any]) -> str:
    """The task of a model dir's head (`edgebert.heads.detect_task`); an unreadable sentence stack is the loader's to report."""
    from edgebert.heads import detect_task, read_sentence_stack

    try:
        has_stack = read_sentence_stack(path) is not None
    except UserError:
        has_stack = True
    return detect_task(config, has_stack)


def assign_tasks(specs: list[ItemSpec], references: dict[str, str]) -> None:
    """Settle each item's task against its reference (`references`: label -> reference label) and mark the items
    that lack their reference's head as failed.

    A masked-LM model dir is benched as an encoder (what `export` ships from it by default) unless an export compared
    with it (with one run-wide reference: any export in the run) is fill-mask. Against a reference with a head, an
    item of another task (an embeddings-only export of a classifier) lacks that head; against an embedder reference,
    a head-only export has no sentence embeddings, while a model dir with a head is benched as the encoder under it."""
    by_label = {s.label: s for s in specs}
    one_reference = len(set(references.values())) == 1
    masked = {references[s.label] for s in specs if s.kind == "export" and s.task == FILL_MASK}
    for spec in specs:
        if spec.kind == "pytorch" and spec.task == FILL_MASK and not (masked and (one_reference or spec.label in masked)):
            spec.task = FEATURE_EXTRACTION
    for spec in specs:
        ref = by_label[references[spec.label]]
        if spec.task == ref.task or spec.unsupported:
            continue
        if ref.task != FEATURE_EXTRACTION:
            spec.unsupported = (
                f"task mismatch: {spec.label} computes {spec.task}, the reference {ref.label} is a {ref.task} model: "
                f"its head is missing, so it cannot be compared (export the model with its head, --task {ref.task})"
            )
        elif spec.kind == "pytorch":
            spec.task = FEATURE_EXTRACTION
        else:
            spec.unsupported = (
                f"task mismatch: {spec.label} is a {spec.task} export without sentence embeddings, the reference "
                f"{ref.label} is a {FEATURE_EXTRACTION} model; bench it against a {spec.task} reference"
            )


def _split_label(text: str) -> tuple[str | None, str]:
    if "=" in text and not Path(text).expanduser().exists():
        label, _, rest = text.partition("=")
        if label.strip() and rest.strip():
            return label.strip(), rest.strip()
    return None, text


# ----------------------------------------------------------------------------------------- opening


def longest_input(spec: ItemSpec) -> int | None:
    """The most tokens `spec` can take (its position table, less RoBERTa's offset), or None when its shape is its own
    (a static export, a bare file): what bench checks --seq-len against before measuring."""
    import json

    from edgebert.families import family_for
    from edgebert.modelio import position_limit
    from edgebert.modeldir import read_manifest

    path = Path(spec.path)
    if spec.kind == "pytorch":
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        family = family_for(str(config.get("model_type")))
        offset = int(config.get("pad_token_id") or 0) + 1 if family.positions_from_pad else 0
        limit = position_limit(config)
        return None if limit is None else limit - offset
    if spec.kind == "export":
        manifest = read_manifest(path)
        positions = manifest.get("model", {}).get("max_positions")
        return None if manifest.get("static_shape") or positions is None else int(positions)
    return None


def open_item(spec: ItemSpec) -> OpenItem:
    """Load what the item needs to run (the model itself for PyTorch items; runners come from `make_runner`)."""
    if spec.kind == "pytorch":
        return _open_pytorch(spec)
    if spec.kind == "export":
        return _open_export(spec)
    if spec.kind in ("onnx", "tflite"):
        return _open_bare_file(spec)
    raise ValueError(f"unknown item kind {spec.kind}")


def _file_sizes(directory: Path, names: list[str] | tuple[str, ...]) -> dict[str, int]:
    return {n: (directory / n).stat().st_size for n in names if (directory / n).is_file()}


def _load_tokenizer(path: str | Path) -> Any:
    from edgebert.modelio import load_tokenizer

    try:
        return load_tokenizer(path)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot load the tokenizer in {path} ({type(exc).__name__}: {exc})") from exc


def count_params_from_config(model_dir: Path) -> int | None:
    """Parameters of the encoder in `model_dir`, read from the safetensors header (no weights loaded).

    Shapes come from the file, so pruned FFN neurons count as removed, and so do pruned heads: a directory that stores
    them as zeros at the stock shapes (`edgebert.pruned_heads`) has those elements subtracted; the family's masked-LM
    head (not part of what is exported) is left out. None when the directory has no safetensors weights.
    """
    import json

    from safetensors import safe_open

    from edgebert.families import family_for

    weights = Path(model_dir) / "model.safetensors"
    config_path = Path(model_dir) / "config.json"
    if not weights.exists() or not config_path.exists():
        return None
    family = family_for(str(json.loads(config_path.read_text()).get("model_type", "")))
    head = family.mlm_class is not None
    total = 0
    with safe_open(str(weights), framework="np") as fh:
        for key in fh.keys():  # noqa: SIM118 - safe_open is not a dict
            if head and family.is_mlm_head_key(key):
                continue
            count = 1
            for dim in fh.get_slice(key).get_shape():
                count *= int(dim)
            total += count
    return total - _stored_zero_heads(Path(model_dir))


def _stored_zero_heads(model_dir: Path) -> int:
    """Elements a head-pruned directory stores as zeros for its removed heads (0 when it stores them narrowed)."""
    from transformers import AutoModel

    from edgebert.modelio import load_config
    from edgebert.pruned_heads import pruned_plan, stored_full_size, zero_head_elements

    config = load_config(model_dir)
    if not pruned_plan(config) or not stored_full_size(model_dir, AutoModel, config):
        return 0
    return zero_head_elements(config)


class TorchRunner(Runner):
    """The PyTorch `SentenceEmbedder` behind the Runner interface; `threads` sets torch's intra-op pool."""

    def __init__(self, embedder: Any, threads: int | None) -> None:
        self.embedder = embedder
        self.threads = threads

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        if self.threads and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        with torch.inference_mode():
            tensors = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.int64)) for k, v in inputs.items() if k in INPUT_NAMES}
            embedding, hidden = self.embedder(**tensors)
        return {"sentence_embedding": embedding.float().numpy(), "last_hidden_state": hidden.float().numpy()}


class TorchHeadRunner(Runner):
    """A transformers task model (classifier, token classifier, masked-LM) behind the Runner interface: {"logits"}."""

    def __init__(self, model: Any, threads: int | None) -> None:
        import inspect

        self.model = model
        self.threads = threads
        self.accepts = set(inspect.signature(model.forward).parameters) & set(INPUT_NAMES)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        if self.threads and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        with torch.inference_mode():
            tensors = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.int64)) for k, v in inputs.items() if k in self.accepts}
            return {"logits": self.model(**tensors).logits.float().numpy()}


def quantize_torch_dynamic(module: Any) -> Any:
    """`module` with int8 dynamic-quantized nn.Linear layers, in place (torch.ao.quantization.quantize_dynamic)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8, inplace=True).eval()


def _state_dict_bytes(module: Any) -> int:
    import torch

    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getbuffer().nbytes


def _open_pytorch(spec: ItemSpec) -> OpenItem:
    import torch

    from edgebert.modelio import load_model

    path = Path(spec.path)
    head = _load_head_model(path, spec.task)  # None for an encoder: the SentenceEmbedder is what it computes
    if head is None:
        loaded = load_model(path)
        model, tokenizer = loaded.embedder, loaded.tokenizer
    else:
        model, tokenizer = head, _load_tokenizer(path)
    params = int(sum(p.numel() for p in model.parameters()))
    id2label = {int(k): str(v) for k, v in head.config.id2label.items()} if head is not None and spec.task != FILL_MASK else None
    weight_names = [n for n in MODEL_DIR_FILES if (path / n).exists()] + sorted(p.name for p in path.glob("model-*.safetensors"))
    files = _file_sizes(path, weight_names)
    notes: list[str] = []
    quantization = "none"
    runtime = f"torch {torch.__version__} (eager, fp32)"
    if spec.torch_int8:
        model = quantize_torch_dynamic(model)
        quantization = "int8-dynamic"
        runtime = f"torch {torch.__version__} (eager, quantize_dynamic int8 Linear)"
        size = _state_dict_bytes(model)
        files = {"state_dict (torch.save, int8 Linear)": size, "config.json": files.get("config.json", 0)}
        notes.append("size is the torch.save'd state_dict after quantize_dynamic (not a file on disk)")
    return OpenItem(
        spec=spec,
        tokenizer=tokenizer,
        target="pytorch",
        runtime=runtime,
        quantization=quantization,
        static_seq_len=None,
        model_bytes=sum(files.values()),
        files=files,
        tokenizer_bytes=sum(_file_sizes(path, TOKENIZER_FILES).values()),
        params=params,
        params_source="model parameters (fp32 count; int8 keeps the same count)" if spec.torch_int8 else "model parameters",
        make_runner=lambda threads: TorchRunner(model, threads) if head is None else TorchHeadRunner(model, threads),
        task=spec.task,
        id2label=id2label,
        notes=notes,
    )


def _load_head_model(path: Path, task: str) -> Any:
    """The model dir as its task's transformers Auto class (eval mode), or None for feature extraction."""
    if task == FEATURE_EXTRACTION:
        return None
    import transformers

    from edgebert.modelio import inspect_model_dir, load_weights

    _, family = inspect_model_dir(path)
    model, info = load_weights(getattr(transformers, TASKS[task][0]), path)
    missing = family.required_missing(info.get("missing_keys", []))
    if missing:
        raise UserError(f"{path}: the {task} head's weights are missing ({missing[0]}); re-save the model")
    return model.eval()


def item_labels(spec: ItemSpec) -> dict[int, str] | None:
    """A classifier item's labels without loading it: config.json's id2label, or the export manifest's."""
    import json

    path = Path(spec.path)
    if spec.kind == "export":
        return manifest_labels(read_manifest(path))
    if spec.kind == "pytorch" and (path / "config.json").is_file():
        id2label = json.loads((path / "config.json").read_text()).get("id2label") or {}
        return {int(k): str(v) for k, v in id2label.items()} or None
    return None


def manifest_labels(manifest: dict[str, Any]) -> dict[int, str] | None:
    """A classifier export's labels: the manifest's model.id2label, or the labels of its logits output."""
    id2label = (manifest.get("model") or {}).get("id2label")
    if id2label:
        return {int(k): str(v) for k, v in id2label.items()}
    logits = next((o for o in manifest.get("outputs") or [] if o.get("name") == "logits" and o.get("labels")), None)
    return dict(enumerate(str(x) for x in logits["labels"])) if logits else None


def _open_export(spec: ItemSpec) -> OpenItem:
    from edgebert.targets import get_exporter

    path = Path(spec.path)
    manifest = read_manifest(path)
    exporter = get_exporter(manifest["target"])
    exporter.check_available()
    tokenizer = _load_tokenizer(path)
    files = _file_sizes(path, list(manifest.get("files", {})))
    source = Path(str(manifest.get("parent") or ""))
    params = count_params_from_config(source) if str(source) and source.is_dir() else None
    runtime = _runtime_name(manifest["target"], manifest)
    out_of_process = manifest["target"] == "tfjs"
    notes = []
    if out_of_process:
        notes.append("TF.js runs in Node (wasm backend, single-threaded); model-call times are measured inside Node")
    if manifest["target"] == "executorch":
        notes.append("ExecuTorch sizes XNNPACK's thread pool itself: the threads setting is not applied")
    return OpenItem(
        spec=spec,
        tokenizer=tokenizer,
        target=str(manifest["target"]),
        runtime=runtime,
        quantization=str(manifest.get("quantization", "none")),
        static_seq_len=int(manifest["seq_len"]) if manifest.get("static_shape") else None,
        model_bytes=sum(files.values()),
        files=files,
        tokenizer_bytes=sum(_file_sizes(path, manifest.get("tokenizer_files", [])).values()),
        params=params,
        params_source=f"source model config ({source})" if params is not None else "unknown",
        make_runner=lambda threads: exporter.load_runner(path, manifest, threads=threads),
        runs_out_of_process=out_of_process,
        task=spec.task,
        id2label=manifest_labels(manifest) if spec.task != FILL_MASK else None,
        notes=notes,
        buckets=tuple(sorted(buckets.from_manifest(manifest))) if manifest.get("static_shape") else (),
    )


def _runtime_name(target: str, manifest: dict[str, Any] | None = None) -> str:
    import importlib.metadata as md

    def version(dist: str) -> str:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "?"

    if target == "onnx":
        return f"onnxruntime {version('onnxruntime')} (CPUExecutionProvider)"
    if target == "tflite":
        return f"ai-edge-litert {version('ai-edge-litert')} (LiteRT interpreter)"
    if target == "executorch":
        return f"executorch {version('executorch')} (XNNPACK delegate)"
    if target == "tfjs":
        backend = os.environ.get("EDGEBERT_TFJS_BACKEND", "wasm")
        detail = (manifest or {}).get("target_details", {}).get("runtime")
        return detail or f"@tensorflow/tfjs in Node ({backend})"
    return target


# ----------------------------------------------------------------------------------------- bare files


def _open_bare_file(spec: ItemSpec) -> OpenItem:
    path = Path(spec.path)
    tokenizer = _load_tokenizer(spec.tokenizer or path.parent)
    if spec.kind == "onnx":
        from edgebert.targets.onnx.runner import BareOnnxRunner as cls
    else:
        from edgebert.targets.tflite.runner import BareTFLiteRunner as cls
    probe = cls(path, spec.pooling, 1)  # fail early (load error) and learn the static length
    static = probe.static_seq_len
    probe.close()
    data_files = [p.name for p in path.parent.glob(path.name + ".data")] + [p.name for p in path.parent.glob(path.stem + ".onnx_data")]
    files = _file_sizes(path.parent, [path.name, *data_files])
    tok_dir = Path(spec.tokenizer or path.parent)
    return OpenItem(
        spec=spec,
        tokenizer=tokenizer,
        target=spec.kind,
        runtime=_runtime_name(spec.kind),
        quantization="unknown",
        static_seq_len=static,
        model_bytes=sum(files.values()),
        files=files,
        tokenizer_bytes=sum(_file_sizes(tok_dir, TOKENIZER_FILES).values()),
        params=None,
        params_source="unknown (bare file)",
        make_runner=lambda threads: cls(path, spec.pooling, threads),
        notes=["bare file: quantization and parameters not recorded"],
        buckets=(static,) if static else (),
    )
