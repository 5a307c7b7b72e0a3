"""Run every item (each in its own worker process), keep going past failures, keep what was measured on Ctrl-C."""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebert import validate
from edgebert.artifact import atomic_output_dir, check_output_dir
from edgebert.bench.items import ItemSpec, assign_tasks, parse_items
from edgebert.bench.measure import PARENT_ENV, MeasureJob, measure_item
from edgebert.bench.references import PARENT, resolve_references
from edgebert.config import BENCH_TARGETS, BenchConfig
from edgebert.data import is_dataset_spec
from edgebert.errors import UserError
from edgebert.heads import TEXT_CLASSIFICATION
from edgebert.targets import tf_subprocess

INTERRUPT_GRACE_S = 15.0
Echo = Callable[[str], None]
_DEFAULTS = BenchConfig()  # build_config's defaults


def _stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


@dataclass
class BenchRun:
    """A whole bench run, resolved from a BenchConfig: the items (reference included), what to measure, and how."""

    items: list[ItemSpec]
    reference: str  # the label of the run's reference item, or "parent" (each export against its model dir)
    references: dict[str, str] = field(default_factory=dict)  # item label -> its reference's label
    job: MeasureJob = field(default_factory=MeasureJob)
    isolate: bool = True  # one worker process per item (memory is the item's own; crashes stay contained)
    timeout_s: float | None = None  # per item
    command: list[str] = field(default_factory=list)

    def reference_of(self, label: str) -> str:
        return self.references.get(label, self.reference)

    @property
    def reference_labels(self) -> list[str]:
        """The items others are compared to, in run order (measured first)."""
        labels = set(self.references.values()) or {self.reference}
        return [i.label for i in self.items if i.label in labels]


@dataclass
class BenchOutcome:
    out_dir: Path
    report: dict[str, Any]
    interrupted: bool


def plan_bench(items: list[str], options: BenchConfig, command: list[str] | None = None) -> BenchRun:
    """The run `options` ask for on `items` ([LABEL=]PATH strings), checked: UserError before anything is measured.
    seq_len / batch / threads may be one int or a list; sts_limit_for a dict keyed by bench target."""
    o = options
    for flag, value in (("--sts", o.sts), ("--sst2", o.sst2), ("--tokenizer", o.tokenizer)):
        validate.path_like(flag, value)
    if not isinstance(o.sts_limit_for, dict) or not all(k in BENCH_TARGETS for k in o.sts_limit_for):
        raise UserError(f"sts_limit_for must be a dict {{TARGET: N}} with TARGET one of {', '.join(BENCH_TARGETS)}, got {o.sts_limit_for!r}")
    job = MeasureJob(
        seq_lens=_int_list(o.seq_len), batches=_int_list(o.batch), threads=_int_list(o.threads), warmup=o.warmup,
        repeats=o.repeats, sts_path=_str(o.sts), sts_limit=o.sts_limit, sts_limits=dict(o.sts_limit_for),
        sst2_path=_str(o.sst2), sst2_limit=o.sst2_limit, texts_path=_str(o.texts), texts_limit=o.texts_limit,
    )  # fmt: skip
    check_numbers(job, o.timeout)
    if o.texts is not None:
        validate.text_file("--texts", validate.path_like("--texts", o.texts))
    job.seq_lens = list(dict.fromkeys(job.seq_lens))
    job.sts_max_length = max(job.seq_lens)
    return build_config(
        items, reference=o.reference, torch_int8=o.torch_int8, tokenizer=_str(o.tokenizer), pooling=o.pooling, job=job,
        isolate=not o.in_process, timeout_s=o.timeout, command=command,
    )  # fmt: skip


def _int_list(value: Any) -> Any:
    """An int as [int], a list/tuple as a list; anything else unchanged (the job check names it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    return list(value) if isinstance(value, (list, tuple)) else value


def _str(path: Any) -> str | None:
    return str(path) if path is not None else None


def build_config(
    items: list[str],
    reference: str | None = _DEFAULTS.reference,
    torch_int8: bool = _DEFAULTS.torch_int8,
    tokenizer: str | None = _DEFAULTS.tokenizer,
    pooling: str = _DEFAULTS.pooling,
    job: MeasureJob | None = None,
    isolate: bool = not _DEFAULTS.in_process,
    timeout_s: float | None = _DEFAULTS.timeout,
    command: list[str] | None = None,
) -> BenchRun:
    """Resolve and validate everything the run needs; UserError (exit 2) before anything is measured."""
    job = job or MeasureJob()
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise UserError(f"bench items must be a list of strings ([LABEL=]PATH), got {items!r}")
    validate.optional_number("--timeout", timeout_s, 0.0, low_open=True)
    _validate_job(job)
    specs = parse_items(items, torch_int8=torch_int8, tokenizer=tokenizer, pooling=pooling)
    references = resolve_references(specs, reference, tokenizer, pooling)
    assign_tasks(specs, references)
    _check_labels(specs, job)
    _check_seq_lens(specs, job)
    run_reference = PARENT if reference == PARENT else next(iter(references.values()))
    return BenchRun(
        items=specs, reference=run_reference, references=references, job=job, isolate=isolate, timeout_s=timeout_s,
        command=command or [],
    )


def check_numbers(job: MeasureJob, timeout_s: Any = None) -> None:
    """Types and ranges of what a bench run measures (the recipe loader checks its [bench] section with it)."""
    for name, values in (("--seq-len", job.seq_lens), ("--batch", job.batches), ("--threads", job.threads)):
        if not isinstance(values, list) or not values:
            raise UserError(f"{name} needs at least one value")
        for value in values:
            validate.integer(name, value, 2 if name == "--seq-len" else 1)
    validate.integer("--repeats", job.repeats, 1)
    validate.integer("--warmup", job.warmup, 0)
    validate.integer("--texts-limit", job.texts_limit, 0)
    validate.optional_integer("--sts-limit", job.sts_limit, 2, hint="pairs")
    validate.optional_integer("--sst2-limit", job.sst2_limit, 1)
    for target, limit in job.sts_limits.items():
        validate.integer(f"--sts-limit-for {target}", limit, 2, hint="pairs")
    validate.optional_number("--timeout", timeout_s, 0.0, low_open=True)


def _validate_job(job: MeasureJob) -> None:
    check_numbers(job)
    if job.sts_path:
        from edgebert.bench.metrics import load_sts_csv

        load_sts_csv(job.sts_path, limit=job.sts_limit)  # UserError on a missing or malformed file
    if job.sst2_path:
        from edgebert.data import load_labelled

        load_labelled(job.sst2_path, limit=1)  # UserError on a missing or malformed file, or a dataset that cannot load
    _check_texts(job)


def _check_seq_lens(specs: list[ItemSpec], job: MeasureJob) -> None:
    """Every --seq-len fits every item that computes the length it is given; UserError up front."""
    from edgebert.bench.items import longest_input

    for spec in specs:
        limit = None if spec.unsupported else longest_input(spec)
        too_long = [n for n in job.seq_lens if limit is not None and n > limit]
        if too_long:
            raise UserError(f"--seq-len {too_long[0]} is longer than {spec.label} takes ({limit} tokens); pass lengths up to {limit}")


def _check_texts(job: MeasureJob) -> None:
    """The --texts of the app-like latency hold text to time; UserError up front."""
    if not job.texts_path or job.texts_limit <= 0:
        return
    from edgebert.bench.app_latency import read_texts

    path = Path(job.texts_path).expanduser()
    if path.is_file():
        validate.text_file("--texts file", path)
    if read_texts(job.texts_path, None, 1) is None:
        raise UserError(f"--texts {job.texts_path} has no non-blank line; pass a file with one text per line")


def _check_labels(specs: list[ItemSpec], job: MeasureJob) -> None:
    """Every classifier item can read the labelled set's labels (its ids or label names); UserError up front."""
    if not job.sst2_path:
        return
    from edgebert.bench.items import item_labels
    from edgebert.data import label_ids, load_labelled

    labels = sorted(set(load_labelled(job.sst2_path, limit=job.sst2_limit).labels))
    for spec in specs:
        if spec.task == TEXT_CLASSIFICATION and not spec.unsupported:
            label_ids(labels, item_labels(spec), f"--sst2 {job.sst2_path} for {spec.label}")


# ----------------------------------------------------------------------------------------- running


class ItemInterrupted(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__("interrupted")
        self.result = result


def run_item_in_process(spec: ItemSpec, job: MeasureJob, echo: Echo) -> dict[str, Any]:
    """Measure `spec` in this process; torch's thread count (which the PyTorch runners set) is the caller's again after."""
    import torch

    holder: dict[str, Any] = {}
    threads = torch.get_num_threads()
    try:
        return measure_item(spec, job, sink=lambda r: holder.update(result=dict(r)))
    except KeyboardInterrupt as exc:
        raise ItemInterrupted(holder.get("result", {"label": spec.label, "status": "interrupted"})) from exc
    finally:
        torch.set_num_threads(threads)


def run_item_subprocess(spec: ItemSpec, job: MeasureJob, echo: Echo, timeout_s: float | None = None) -> dict[str, Any]:
    """Measure `spec` in `python -m edgebert.bench.measure SPEC.json`; its last written result, whatever happens to it."""
    with tempfile.TemporaryDirectory(prefix="edgebert-bench-") as scratch:
        job_file, result_file = tf_subprocess.write_spec(Path(scratch), {"item": spec.as_dict(), "job": job.as_dict()})
        # stdin is empty (nothing in the worker may prompt, e.g. to run a model's own code); the worker dies with us
        # (measure.die_with_parent).
        proc = tf_subprocess.start("edgebert.bench.measure", job_file, tensorflow=False, extra_env={PARENT_ENV: str(os.getpid())})
        tail: collections.deque[str] = collections.deque(maxlen=30)

        def pump() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                if line.startswith("bench: "):
                    echo("  " + line[len("bench: ") :].rstrip())
                elif line.strip():
                    tail.append(line.rstrip())

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()

        def read_result() -> dict[str, Any]:
            try:
                return json.loads(result_file.read_text())
            except (OSError, json.JSONDecodeError):
                return {"label": spec.label, "spec": spec.as_dict()}

        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            result = read_result()
            result.update(status="failed", error=f"timed out after {timeout_s:g} s during {result.get('stage', 'load')}")
            return result
        except KeyboardInterrupt as exc:
            # A terminal Ctrl-C reaches the worker too; either way give it a moment to write what it has.
            try:
                try:
                    proc.wait(timeout=2.0)  # a terminal Ctrl-C already reached it: let it write and exit
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGINT)
                    proc.wait(timeout=INTERRUPT_GRACE_S)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                proc.kill()
                proc.wait()
            result = read_result()
            result["status"] = "interrupted"
            result.setdefault("error", f"interrupted during {result.get('stage', 'load')}")
            raise ItemInterrupted(result) from exc
        reader.join(timeout=5)
        result = read_result()
        if proc.returncode != 0 and result.get("status") != "failed":
            how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
            last = next((line for line in reversed(tail) if line.strip()), "")
            result.update(status="failed", error=f"worker process died ({how}) during {result.get('stage', 'load')}: {last}"[:500])
        if result.get("status") == "failed" and tail:
            result["stderr_tail"] = list(tail)[-10:]
        return result


def bench_inputs(config: BenchRun) -> dict[str, list[str | None]]:
    """What a bench run reads, by flag: the items, their tokenizers, the STS and SST-2 files."""
    return {
        "ITEM": [s.path for s in config.items],
        "--tokenizer": [s.tokenizer for s in config.items],
        "--sts": [config.job.sts_path],
        "--sst2": [p for p in [config.job.sst2_path] if p and not is_dataset_spec(p)],
    }


def run_bench(config: BenchRun, out: str | Path, force: bool = False, echo: Echo = _stderr) -> BenchOutcome:
    """Measure every item (the references first) and write report.json / report.md / report.png into `out`."""
    from edgebert.bench.report import build_report, machine_info, write_report

    validate.path_like("--out", out, optional=False)
    inputs = bench_inputs(config)
    check_output_dir(Path(out), force, inputs)
    started = dt.datetime.now(dt.timezone.utc)
    machine = machine_info()
    first = config.reference_labels
    order = [s for s in config.items if s.label in first] + [s for s in config.items if s.label not in first]
    results: dict[str, dict[str, Any]] = {}
    interrupted = False
    with atomic_output_dir(Path(out), force=force, inputs=inputs) as work:
        t0 = time.perf_counter()
        for n, spec in enumerate(order, start=1):
            echo(f"[{n}/{len(order)}] {spec.label} ({spec.kind}{'' if spec.kind != 'export' else ' ' + spec.target})")
            load = [round(x, 2) for x in os.getloadavg()]
            try:
                if spec.unsupported:
                    result = {"label": spec.label, "spec": spec.as_dict(), "status": "failed", "stage": "load", "error": spec.unsupported}
                elif config.isolate:
                    result = run_item_subprocess(spec, config.job, echo, config.timeout_s)
                else:
                    result = run_item_in_process(spec, config.job, echo)
            except (ItemInterrupted, KeyboardInterrupt) as exc:
                result = exc.result if isinstance(exc, ItemInterrupted) else {"label": spec.label, "status": "interrupted"}
                result["status"] = "interrupted"
                results[spec.label] = result
                interrupted = True
                echo(f"  interrupted: writing the report with what was measured to {out}")
                break
            result["loadavg_at_start"] = load
            results[spec.label] = result
            if result.get("status") != "ok":
                echo(f"  FAILED: {result.get('error')}")
        machine["loadavg_end"] = list(os.getloadavg())
        report = build_report(
            config,
            results,
            machine=machine,
            started=started,
            wall_s=time.perf_counter() - t0,
            interrupted=interrupted,
        )
        write_report(work, report, echo=echo)
    return BenchOutcome(out_dir=Path(out), report=report, interrupted=interrupted)
