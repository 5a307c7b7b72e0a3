"""`edgebert export`: convert a model directory to an on-device target and prove it matches PyTorch."""

from __future__ import annotations

import hashlib
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert import arm64, buckets, cost, validate
from edgebert.artifact import atomic_output_dir, check_output_dir, dir_size
from edgebert.config import DEFAULT_CALIBRATION_SAMPLES, ExportConfig
from edgebert.errors import UserError, VerificationError
from edgebert.heads import FEATURE_EXTRACTION, choose_task
from edgebert.modeldir import MANIFEST, new_manifest, write_manifest
from edgebert.options import checked, keyword_options
from edgebert.modelio import LoadedModel, check_within_positions, inspect_model_dir, load_model
from edgebert.parity import (
    PARITY_SENTENCES, compare, default_min_cosine, encode, merge_reports, natural_references, torch_reference, torch_references,
)
from edgebert.parity_texts import wide_parity_texts
from edgebert.progress import Stages
from edgebert.sources import resolve_model
from edgebert.targets.onnx import transformers_js
from edgebert.targets.onnx.transformers_js import TRANSFORMERS_JS
from edgebert.weight_grids import WeightGrid, grid_for
from edgebert.task_heads import FILL_MASK, check_task_config, manifest_outputs
from edgebert.task_heads import labels as task_labels

MIN_SEQ_LEN = 2  # [CLS] and [SEP]
WIDE_CHECK = "wide_texts"  # the parity check on `edgebert.parity_texts` (a few hundred texts as apps feed them)
# Quantization recipes that calibrate activation ranges on text (`--calibration`).
CALIBRATED_QUANTIZATIONS = ("int8-static",)


@dataclass
class ExportReport:
    """What an export produced: where, which files, and how faithful it is."""

    out_dir: Path
    manifest: dict[str, Any]

    @property
    def parity(self) -> dict[str, Any]:
        return self.manifest["parity"]


def default_out_dir(model: LoadedModel, target: str, quantize: str) -> Path:
    """`edgebert-exports/<model>-<target>[-<quantization>]` in the working directory."""
    suffix = "" if quantize == "none" else f"-{quantize}"
    return Path("edgebert-exports") / f"{model.name}-{target}{suffix}"


@keyword_options(ExportConfig)
def export(target: str, model: str | Path | None = None, out: str | Path | None = None, **options: Any) -> ExportReport:
    """Export `model` (dir, hub id or None for the default teacher) to `target`, verified against PyTorch.

    Calibrated recipes (`int8-static`) take their sentences from the text file `calibration` (one passage
    per line, .gz ok) or from `calibration_texts`: the first `calibration_samples` (default 200) that are not
    parity sentences.
    Raises UserError for bad input (nothing written), VerificationError when parity is below tolerance
    and TargetUnavailable when the target's toolchain is missing; `out` is only created on success.
    """
    from edgebert.targets import get_exporter
    from edgebert.targets.base import ExportOptions

    o = ExportConfig(**checked(ExportConfig, options, "export"))
    quantize, seq_len, force, min_cosine, quiet = o.quantize, o.seq_len, o.force, o.min_cosine, o.quiet
    calibration, calibration_texts, calibration_samples = o.calibration, o.calibration_texts, o.calibration_samples
    check_arguments(target, model, out, quantize, seq_len, min_cosine, calibration, calibration_samples)
    validate.integer("--tfjs-batched-attention-max-len", o.tfjs_batched_attention_max_len, 0)
    lengths = buckets.lengths(seq_len, o.buckets, MIN_SEQ_LEN)
    seq_len = max(lengths)
    exporter = get_exporter(target)
    quantize = quantize or "none"
    if quantize != "none" and quantize not in exporter.quantizations:
        offered = ", ".join(("none",) + exporter.quantizations)
        raise UserError(f"--quantize {quantize} is not offered by target {target}; choose one of: {offered}")
    input_dtype = check_input_dtype(exporter, o.input_dtype)
    arm64.texts()  # a bad EDGEBERT_ARM64_TEXTS is refused before anything is converted
    check_layout(exporter, o.layout)
    texts, calibration_record = calibration_set(quantize, calibration, calibration_texts, calibration_samples)
    inputs = {"--model": model, "--calibration": calibration}
    if out is not None:
        check_output_dir(Path(out), force, inputs)
    exporter.check_available()

    model_dir = resolve_model(model)
    inputs["--model"] = model_dir
    config, family = inspect_model_dir(model_dir)
    family.require("export")
    check_within_positions("--seq-len", seq_len, config)
    task, head_left_out = choose_task(config, (model_dir / "modules.json").is_file(), o.task, model_dir)
    check_task_config(config, task, o.top_k)
    if o.layout == TRANSFORMERS_JS:
        transformers_js.check(task, config, o.input_dtype)

    # the cost of each phase, for the manifest (edgebert.cost); what the conversion starts ahead, beside the loading
    with cost.recording() as phases, exporter.warm_up():
        stages = Stages(total=4, quiet=quiet)
        started, cpu_started = time.perf_counter(), cost.cpu_seconds()
        with stages.stage("loading model"):
            loaded = load_model(model_dir, task, o.top_k)
        out_dir = Path(out) if out is not None else default_out_dir(loaded, target, quantize)
        check_output_dir(out_dir, force, inputs)
        _check_finite(loaded, seq_len)
        options = ExportOptions(
            seq_len=seq_len, quantize=quantize, calibration_texts=texts, buckets=lengths,
            tfjs_batched_attention_max_len=o.tfjs_batched_attention_max_len, input_dtype=input_dtype, layout=o.layout,
        )  # fmt: skip
        threshold = min_cosine if min_cosine is not None else default_min_cosine(quantize)

        with atomic_output_dir(out_dir, force=force, inputs=inputs) as work:
            manifest = _convert_and_verify(exporter, loaded, options, work, threshold, stages, calibration_record, head_left_out)
            manifest["metrics"]["wall_time_s"] = round(time.perf_counter() - started, 2)
            manifest["metrics"]["cpu_time_s"] = round(cost.cpu_seconds() - cpu_started, 2)
            manifest["metrics"]["stage_times_s"] = stages.timings
            manifest["metrics"]["phases"] = list(phases)
            if not manifest["parity"]["passed"]:
                passing = _recipes_that_pass(exporter, loaded, options, min_cosine, stages) if quantize != "none" else None
                _raise_if_drifted(manifest["parity"], target, out_dir, passing)
            write_manifest(work, manifest)
        return ExportReport(out_dir=out_dir, manifest=manifest)


def check_input_dtype(exporter: Any, dtype: Any) -> str:
    """The ids' integer type the export takes: `dtype`, or the target's default when None (UserError, one line, when the
    target cannot take it)."""
    if dtype is None:
        return exporter.input_dtypes[0]
    if dtype not in exporter.input_dtypes:
        offered = " or ".join(exporter.input_dtypes)
        raise UserError(f"--input-dtype {dtype} is not offered by target {exporter.name}; it takes {offered}")
    return str(dtype)


def check_layout(exporter: Any, layout: Any) -> None:
    """UserError (one line) for a layout the target does not write."""
    if layout not in exporter.layouts:
        written = ", ".join(exporter.layouts)
        raise UserError(f"--layout {layout} is not written by target {exporter.name}; it writes {written}")


def check_arguments(
    target: Any,
    model: Any,
    out: Any,
    quantize: Any,
    seq_len: Any,
    min_cosine: Any,
    calibration: Any,
    calibration_samples: Any,
) -> None:
    """Types and ranges of export()'s arguments, before anything is loaded or written (UserError, one line)."""
    for name, value in (("--target", target), ("--quantize", quantize)):
        if not isinstance(value, str) and not (name == "--quantize" and value is None):
            raise UserError(f"{name} must be a string, got {value!r}")
    if model is not None and not isinstance(model, (str, Path)):
        raise UserError(f"--model must be a model dir, hub id or 'default' (str or Path), got {model!r}")
    validate.path_like("--out", out)
    validate.path_like("--calibration", calibration)
    buckets.normalize(seq_len, MIN_SEQ_LEN)
    validate.optional_number("--min-cosine", min_cosine, 0.0, 1.0, low_open=True)
    validate.optional_integer("--calibration-samples", calibration_samples, 1)


def calibration_set(
    quantize: str,
    path: str | Path | None,
    texts: list[str] | None,
    samples: int | None = None,
) -> tuple[tuple[str, ...], dict[str, Any] | None]:
    """The calibration sentences of a calibrated recipe and their manifest record; ((), None) for the others.

    Passages equal to a parity sentence (ignoring case and whitespace) are dropped, so that parity is
    measured on text the quantization ranges have not seen. UserError when a calibrated recipe has no
    text, or when text is given to a recipe that does not use it.
    """
    given = path is not None or texts is not None
    if quantize not in CALIBRATED_QUANTIZATIONS:
        if given:
            raise UserError(f"--calibration is only used by --quantize {' / '.join(CALIBRATED_QUANTIZATIONS)}")
        return (), None
    if not given:
        raise UserError(
            f"--quantize {quantize} calibrates activation ranges on text: pass --calibration FILE "
            "(one passage per line, .gz ok)"
        )
    if path is not None and texts is not None:
        raise UserError("pass calibration text as a file or as a list of passages, not both")
    samples = DEFAULT_CALIBRATION_SAMPLES if samples is None else samples
    if samples <= 0:
        raise UserError(f"--calibration-samples must be a positive number of passages, got {samples}")
    record: dict[str, Any] = {}
    if path is not None:
        from edgebert.compress.importance import read_calibration
        from edgebert.data import corpus_fingerprint

        file = Path(path).expanduser()
        texts = read_calibration(file, max_passages=samples + len(PARITY_SENTENCES))
        record.update(file=str(file.absolute()), file_fingerprint=corpus_fingerprint(file))
    parity = {_normalized(s) for s in PARITY_SENTENCES}
    candidates = [t for t in texts or [] if t.strip()]
    kept = [t for t in candidates if _normalized(t) not in parity]
    if not kept:
        raise UserError("the calibration text has no passages besides the parity sentences; pass other text")
    used = tuple(kept[:samples])
    record.update(
        passages=len(used),
        passages_sha256=hashlib.sha256("\n".join(used).encode()).hexdigest()[:16],
        dropped_parity_sentences=len(candidates) - len(kept),
        max_passages=samples,
    )
    return used, record


def _check_finite(loaded: LoadedModel, seq_len: int) -> None:
    """VerificationError when the PyTorch model itself computes NaN/inf on the parity sentences (nothing to export)."""
    import numpy as np

    with cost.phase("finite check (PyTorch)"):
        outputs = torch_reference(loaded.embedder, encode(loaded.tokenizer, PARITY_SENTENCES, seq_len, pad_to_seq_len=False))
    if not all(np.isfinite(v).all() for v in outputs.values()):
        raise VerificationError(
            f"the model computes NaN/inf on the parity sentences (its weights in {loaded.path} hold NaN/inf or overflow); "
            "nothing was written"
        )


def _normalized(text: str) -> str:
    return " ".join(text.split()).lower()


def verify_kernel_paths(
    paths: dict[str, Any], loaded: LoadedModel, seq_len: int, lengths: tuple[int, ...], threshold: float
) -> dict[str, Any]:
    """Parity on every kernel path the artifact can meet (`Exporter.kernel_paths`), and on every bucket (`lengths`)
    of a static-shape artifact (() for dynamic shapes); the worst one decides. A path proved to compute what another
    computes (`KernelPath.proof`) is not run: it carries that path's figures, `same_as` and the proof.

    Also records the CPU that ran the check: which kernels "host" means depends on it (edgebert.cpu).
    """
    from edgebert import cpu
    from edgebert.targets.base import runnable

    with cost.phase("reference outputs (PyTorch)"):
        checks = _parity_checks(loaded, seq_len, lengths)  # the PyTorch side once, for every path
    checked: dict[str, Any] = {}
    samples: dict[int, dict[str, list[tuple[dict, dict]]]] = {}
    try:
        for name, path in runnable(paths).items():
            if path.texts is not None and path.texts not in samples:
                samples[path.texts] = sample_checks(checks, path.texts)  # one sample, shared by the emulated paths
            run = checks if path.texts is None else samples[path.texts]
            with cost.phase(f"parity: {name}"):
                reports = _verify(path.runner, run, threshold, getattr(loaded.config, "problem_type", None))
                path.runner.close()  # inside the phase: a worker process's CPU seconds count once it has exited
            worst = min(r["min_cosine"] for r in reports.values())
            sampled = {} if path.texts is None else {"texts_per_check": path.texts}
            checked[name] = {"description": path.description, "min_cosine": worst, **sampled, **reports}
    finally:
        for path in runnable(paths).values():
            path.runner.close()
    for name, path in paths.items():  # proved to compute what a run path computes: its figures, and the proof
        if path.runner is None:
            checked[name] = {**checked[path.same_as], "description": path.description, "same_as": path.same_as, "proof": path.proof}
    checked = {name: checked[name] for name in paths}
    worst = min(p["min_cosine"] for p in checked.values())
    wide = [p[WIDE_CHECK] for p in checked.values()]
    spread = {"texts": wide[0]["sentences"], "min_cosine": min(w["min_cosine"] for w in wide), "p1_cosine": min(w["p1_cosine"] for w in wide)}
    return {
        "min_cosine": worst, "threshold": threshold, "passed": worst >= threshold, WIDE_CHECK: spread,
        "cpu": cpu.cpu_info(), "kernel_paths": checked,
    }  # fmt: skip


def _convert_and_verify(
    exporter: Any, loaded: LoadedModel, options: Any, work: Path, threshold: float, stages: Stages,
    calibration_record: dict[str, Any] | None = None, head_left_out: str | None = None,
) -> dict[str, Any]:
    """Convert `loaded` into `work` with the tokenizer and the manifest, and check parity on every kernel path;
    the manifest, parity included (whether it passed or not)."""
    target, quantize = exporter.name, options.quantize
    with stages.stage(f"converting to {target}" + ("" if quantize == "none" else f" ({quantize})")):
        result = exporter.convert(loaded, work, options)
    if len(options.buckets) > 1 and not result.static_shape:
        stages.note(f"{target} has dynamic axes: no buckets needed; inputs are truncated to {options.seq_len} tokens")
    with stages.stage("saving tokenizer"):
        tokenizer_files = [Path(f).name for f in loaded.tokenizer.save_pretrained(str(work))]
        if options.layout == TRANSFORMERS_JS:
            transformers_js.cut_tokenizer(work, options.seq_len)
    if calibration_record is not None:
        result.extra.setdefault("quantization", {})["calibration"] = calibration_record
    manifest = _manifest(loaded, target, options, result, tokenizer_files, work, threshold)
    if options.layout == TRANSFORMERS_JS:
        transformers_js.add_pipeline_options(manifest)
    if head_left_out:
        manifest["model"]["head_left_out"] = head_left_out
        stages.note(f"exporting the encoder's sentence embeddings only: the model's {head_left_out} head is left out (--task {loaded.task})")
    write_manifest(work, manifest)
    with stages.stage(f"verifying in the {target} runtime against PyTorch"):
        lengths = tuple(sorted(result.buckets)) if result.static_shape else ()
        with cost.phase("loading the kernel paths"):
            paths = exporter.kernel_paths(work, manifest)
        manifest["parity"] = verify_kernel_paths(paths, loaded, options.seq_len, lengths, threshold)
    from edgebert.targets import arm64_paths

    record = arm64_paths.record(paths, exporter.arm64_unchecked(manifest))
    if record is not None:
        manifest["parity"]["arm64"] = record
        if not record["checked"]:
            stages.note(f"ARM64 kernels not checked: {record['reason']}")
    return manifest


def _recipes_that_pass(exporter: Any, loaded: LoadedModel, options: Any, min_cosine: float | None, stages: Stages) -> list[str]:
    """The target's other quantizations that hold for this model, each converted and verified as the export was
    (scratch space, nothing kept): "<recipe> (min cosine x)". A calibrated recipe without calibration text is not
    tried; a 4-bit recipe is tried only on a model trained on the target's grid for it, and otherwise named last as what holds
    once the model is (`_on_grid_for`)."""
    import dataclasses
    import tempfile

    passing, once_trained = [], []
    for quantize in exporter.quantizations:
        if quantize == options.quantize:
            continue
        if quantize in CALIBRATED_QUANTIZATIONS and not options.calibration_texts:
            continue
        if quantize in FOUR_BIT:  # only a model trained on the target's grid holds it: named, not tried, otherwise
            grid = grid_for(exporter.name, quantize)
            if grid is None or not _on_grid_for(loaded, grid):
                if grid is not None and loaded.task != FILL_MASK:  # grid training leaves an MLM head off the grid
                    once_trained.append(f"{quantize} once trained on the {grid.name} weight grid (distill --weight-grid {grid.name})")
                continue
        threshold = min_cosine if min_cosine is not None else default_min_cosine(quantize)
        stages.note(f"trying --quantize {quantize} on this model (threshold {threshold})")
        with tempfile.TemporaryDirectory(prefix="edgebert-recipe-") as scratch:
            trial = dataclasses.replace(options, quantize=quantize)
            parity = _convert_and_verify(exporter, loaded, trial, Path(scratch), threshold, Stages(total=3, quiet=True))["parity"]
        if parity["passed"]:
            passing.append(f"{quantize} (min cosine {parity['min_cosine']:.6f})")
    return passing + once_trained


FOUR_BIT = ("int4", "w4a8")  # the recipes whose 4-bit weights hold only on a model trained on their grid


def _on_grid_for(loaded: LoadedModel, grid: WeightGrid) -> bool:
    """Whether the model was trained on `grid` (its manifest's `model.weight_grid`). Only then is the grid's recipe
    tried as an alternative: post-training 4-bit rounding does not hold 0.99 on a trained model (docs/export.md: the
    teacher 0.86, the `small` student 0.97), and trying it costs a conversion per float-island rung."""
    trained = ((loaded.manifest or {}).get("model") or {}).get("weight_grid") or {}
    return trained.get("name") == grid.name


def _raise_if_drifted(parity: dict[str, Any], target: str, out_dir: Path, passing: list[str] | None = None) -> None:
    """VerificationError naming the worst kernel path when parity is below the threshold, and the target's recipes
    that hold for this model (`passing`, measured; None: not looked for, as for an unquantized export)."""
    if parity["passed"]:
        return
    name, worst = min(parity["kernel_paths"].items(), key=lambda item: item[1]["min_cosine"])
    diff = max(r["max_abs_diff"] for r in worst.values() if isinstance(r, dict))
    where = "" if len(parity["kernel_paths"]) == 1 else f" on kernel path '{name}' ({worst['description']})"
    advice = ""
    if passing is not None:
        advice = f"; recipes that hold for this model: {', '.join(passing)}" if passing else "; no other recipe of this target holds either"
    raise VerificationError(
        f"{target} export drifts from PyTorch{where}: min cosine {worst['min_cosine']:.6f} < {parity['threshold']} "
        f"(max abs diff {diff:.2e}){advice}; nothing was written to {out_dir}"
    )


def _parity_checks(loaded: LoadedModel, seq_len: int, lengths: tuple[int, ...]) -> dict[str, list[tuple[dict, dict]]]:
    """The parity inputs, the way the artifact is used, each with its PyTorch reference: {check: [(inputs, ref)]}.

    Static-shape targets (TFLite, TF.js) take every sentence truncated and padded to each bucket of `lengths`
    (check `fixed_length` for one bucket, `bucket_<n>` for several: every bucket's graph runs), against PyTorch on
    each text at its own length (`parity.natural_references`: the padding is the export's, not the model's). Dynamic-shape targets
    (ONNX) are checked as an app runs them: each sentence alone at its own length (truncated to
    `seq_len`), and one batch padded to its longest sentence (exercises both dynamic axes).
    """
    tokenizer = loaded.tokenizer
    if lengths:
        names = {n: "fixed_length" if len(lengths) == 1 else f"bucket_{n}" for n in lengths}
        batches = {names[n]: [encode(tokenizer, PARITY_SENTENCES, n, pad_to_seq_len=True)] for n in lengths}
    else:
        batches = {
            "natural_length": [encode(tokenizer, [s], seq_len, pad_to_seq_len=False) for s in PARITY_SENTENCES],
            "padded_batch": [encode(tokenizer, PARITY_SENTENCES[:4], seq_len, pad_to_seq_len=False)],
        }
    batches[WIDE_CHECK] = _wide_inputs(tokenizer, seq_len, lengths)
    feeds = [x for inputs in batches.values() for x in inputs]
    references = iter((natural_references if lengths else torch_references)(loaded.embedder, feeds))
    return {name: [(x, next(references)) for x in inputs] for name, inputs in batches.items()}


def _wide_inputs(tokenizer: Any, seq_len: int, lengths: tuple[int, ...]) -> list[dict[str, Any]]:
    """The wide parity texts (`edgebert.parity_texts`) as an app feeds them: each alone at its own length (dynamic
    shapes), or each in the smallest bucket it fits, one batch per bucket (static shapes); truncated to `seq_len`."""
    texts = wide_parity_texts()
    if not lengths:
        return [encode(tokenizer, [t], seq_len, pad_to_seq_len=False) for t in texts]
    sizes = [int(m.sum()) for m in encode(tokenizer, texts, seq_len, pad_to_seq_len=False)["attention_mask"]]
    groups: dict[int, list[str]] = {}
    for text, size in zip(texts, sizes):
        groups.setdefault(buckets.pick(size, lengths), []).append(text)
    return [encode(tokenizer, group, n, pad_to_seq_len=True) for n, group in sorted(groups.items())]


def _verify(runner: Any, checks: dict[str, list[tuple[dict, dict]]], threshold: float, problem_type: str | None) -> dict[str, Any]:
    """Parity of the runner against the PyTorch references of `checks` (several inputs of one check: merged); every
    check's inputs go to the runner in one `run_many` (one pool of workers, one emulated child)."""
    outputs = iter(runner.run_many([x for items in checks.values() for x, _ in items]))
    reports = {}
    for name, items in checks.items():
        parts = [compare(reference, next(outputs), x["attention_mask"], threshold, problem_type) for x, reference in items]
        reports[name] = (merge_reports(parts) if len(parts) > 1 else parts[0]).as_dict()
    return reports


def sample_checks(checks: dict[str, list[tuple[dict, dict]]], count: int) -> dict[str, list[tuple[dict, dict]]]:
    """`count` rows of each check, one input each, spread evenly over its rows sorted by token count (the shortest
    and the longest included), for the paths that cannot afford every row (emulated CPUs). The padded batch, which
    tests the batch axis rather than the kernels, is left out."""
    import numpy as np

    sampled = {}
    for name, items in checks.items():
        if name == "padded_batch":
            continue
        rows = [(x, ref, r) for x, ref in items for r in range(len(x["input_ids"]))]
        rows.sort(key=lambda row: int(row[0]["attention_mask"][row[2]].sum()))
        picks = sorted({round(i) for i in np.linspace(0, len(rows) - 1, min(count, len(rows)))})
        sampled[name] = [_one_row(*rows[i]) for i in picks]
    return sampled


def _one_row(inputs: dict[str, Any], reference: dict[str, Any], row: int) -> tuple[dict, dict]:
    return {k: v[row : row + 1] for k, v in inputs.items()}, {k: v[row : row + 1] for k, v in reference.items()}


def _manifest(
    loaded: LoadedModel, target: str, options: Any, result: Any, tokenizer_files: list[str], work: Path, min_cosine: float
) -> dict[str, Any]:
    """The export's edgebert.json: the common fields (parent = the model dir) and the export's own (target, inputs,
    files, tokenizer, target details; parity is added once verified)."""
    batch = 1 if result.static_shape else "batch"
    lengths = sorted(result.buckets) if result.static_shape else []
    seq = ("bucket" if len(lengths) > 1 else options.seq_len) if result.static_shape else "sequence"
    hidden = int(loaded.config.hidden_size)
    asked = list(options.lengths) if len(options.lengths) > 1 else options.seq_len
    recipe = {"target": target, "quantize": options.quantize, "seq_len": asked, "min_cosine": min_cosine}
    model = {
        "family": loaded.family.name,
        **_task_model_fields(loaded),
        "hidden_size": hidden,
        "layers": int(loaded.config.num_hidden_layers),
        "max_positions": loaded.max_positions,
        "do_lower_case": bool(getattr(loaded.tokenizer, "do_lower_case", False)),
        "padding_side": str(getattr(loaded.tokenizer, "padding_side", "right")),
    }
    manifest = new_manifest(
        "export", "export", loaded.name, loaded.path.absolute(), loaded.manifest, recipe=recipe, model=model,
        outputs=_outputs(loaded, batch, seq), metrics={"model_bytes": dir_size(work, result.files)}, task=loaded.task,
    )
    return {
        **manifest,
        "target": target,
        "quantization": options.quantize,
        "seq_len": options.seq_len,
        "static_shape": result.static_shape,
        **({"buckets": [{"seq_len": n, **result.buckets[n]} for n in lengths]} if lengths else {}),
        "inputs": [{"name": n, "dtype": result.input_dtype, "shape": [batch, seq]} for n in loaded.family.input_names()],
        "files": {f: (work / f).stat().st_size for f in result.files},
        "tokenizer_files": sorted(tokenizer_files),
        "target_details": result.extra,
        "host": {"python": platform.python_version(), "machine": platform.machine()},
    }


def _task_model_fields(loaded: LoadedModel) -> dict[str, Any]:
    """The manifest's model fields that depend on the task: the sentence stack, or the head's class and labels."""
    if loaded.task == FEATURE_EXTRACTION:
        return {"pooling": loaded.pooling, "sentence_stack": loaded.stack.describe()}
    fields: dict[str, Any] = {"head": type(loaded.embedder.model).__name__}
    if loaded.task == FILL_MASK:
        return {**fields, "vocab_size": int(loaded.config.vocab_size), "top_k": loaded.embedder.top_k}
    fields["id2label"] = {str(i): name for i, name in enumerate(task_labels(loaded.config))}
    if getattr(loaded.config, "problem_type", None):
        fields["problem_type"] = loaded.config.problem_type
    return fields


def _outputs(loaded: LoadedModel, batch: Any, seq: Any) -> list[dict[str, Any]]:
    """The manifest's `outputs`: the sentence embedding and token states, or the task head's outputs."""
    if loaded.task != FEATURE_EXTRACTION:
        return manifest_outputs(loaded.task, loaded.config, batch, seq, getattr(loaded.embedder, "top_k", 0))
    dim, hidden = loaded.embedding_dim, int(loaded.config.hidden_size)
    return [
        {"name": "sentence_embedding", "dim": dim, "dtype": "float32", "shape": [batch, dim], "normalized": loaded.stack.normalize},
        {"name": "last_hidden_state", "dim": hidden, "dtype": "float32", "shape": [batch, seq, hidden]},
    ]


__all__ = ["export", "ExportReport", "MANIFEST"]
