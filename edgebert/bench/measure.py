"""Measure one bench item: what it ships, peak memory, latency per (seq len, batch, threads), its task metric.

`measure_item` runs in a worker process of its own (`python -m edgebert.bench.measure JOB RESULT`, started by
the harness) so that memory is the item's alone and a crashing runtime takes down only its item. It reports
through `sink(result)` after every stage, so whatever was measured survives a failure or an interrupt.

Method (also written into every report):
- inputs for latency are real text truncated to exactly `seq_len` tokens (no padding), `batch` rows; static-shape
  exports shorter than their fixed length are zero-padded to it (they always compute the fixed length);
- model call alone and tokenizer + model: warm-up calls untimed, then `repeats` rounds of [runner.run(inputs)]
  and [tokenizer(texts) -> runner.run(...)], each timed with perf_counter, interleaved so both see the same
  machine conditions; runners that time themselves (TF.js, inside Node: process start-up and model load
  excluded) use `Runner.time_calls`, and tokenizer + model is then the tokenizer time plus that model time;
- peak memory: RSS of the worker process plus its children (Node for TF.js), sampled every 5 ms with psutil
  from a baseline taken after the runtime libraries are imported until after model load and one call at each
  configuration; delta = peak - baseline (model weights + runtime session + activations);
- STS: unique sentences embedded once (batched, sorted by length; static exports one padded row at a time),
  Spearman of cosine vs gold over the pairs;
- classifiers, fill-mask and token classification: predictions from the runner's outputs on the same batches
  (edgebert.bench.tasks), accuracy on labelled sentences and agreement with the reference (in the report).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgebert import buckets
from edgebert.bench.items import ItemSpec, OpenItem, open_item
from edgebert.bench.metrics import summarize
from edgebert.config import BenchConfig
from edgebert.options import default
from edgebert.parity import PARITY_SENTENCES, encode
from edgebert.targets.base import Runner

MEMORY_SAMPLE_S = 0.005
PARENT_ENV = "EDGEBERT_BENCH_PARENT"  # the harness's PID: a worker never outlives it
PARENT_POLL_S = 1.0
Sink = Callable[[dict[str, Any]], None]


@dataclass
class MeasureJob:
    """What to measure, the same for every item of a run (JSON-serialisable for the worker)."""

    seq_lens: list[int] = field(default_factory=lambda: default(BenchConfig, "seq_len"))
    batches: list[int] = field(default_factory=lambda: default(BenchConfig, "batch"))
    threads: list[int] = field(default_factory=lambda: default(BenchConfig, "threads"))
    warmup: int = default(BenchConfig, "warmup")
    repeats: int = default(BenchConfig, "repeats")
    sts_path: str | None = None
    sts_limit: int | None = None
    sts_limits: dict[str, int] = field(default_factory=dict)  # per target (e.g. {"tfjs": 200}): fewer pairs
    sts_max_length: int = max(default(BenchConfig, "seq_len"))
    sts_batch: int = 32
    sst2_path: str | None = None
    sst2_limit: int | None = default(BenchConfig, "sst2_limit")
    texts_path: str | None = None  # app-like latency: these texts (default: the STS sentences)
    texts_limit: int = default(BenchConfig, "texts_limit")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def log(message: str) -> None:
    """A progress line for the harness (it echoes stderr lines starting with 'bench:')."""
    sys.stderr.write(f"bench: {message}\n")
    sys.stderr.flush()


# ----------------------------------------------------------------------------------------- statistics


def timed(fn: Callable[[], Any], warmup: int, repeats: int) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


# ----------------------------------------------------------------------------------------- memory


class RSSSampler:
    """Peak RSS of this process plus its children, sampled in a background thread."""

    def __init__(self, interval: float = MEMORY_SAMPLE_S) -> None:
        import psutil

        self.process = psutil.Process()
        self.interval = interval
        self.baseline = self.current()
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def current(self) -> int:
        import psutil

        total = self.process.memory_info().rss
        for child in self.process.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:
                pass
        return total

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.current())
            except Exception:  # noqa: BLE001 - a vanished child between listing and reading
                pass
            self._stop.wait(self.interval)

    def __enter__(self) -> RSSSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.current())

    def as_dict(self) -> dict[str, Any]:
        mb = 1024 * 1024
        return {
            "baseline_rss_mb": round(self.baseline / mb, 1),
            "peak_rss_mb": round(self.peak / mb, 1),
            "delta_rss_mb": round(max(0, self.peak - self.baseline) / mb, 1),
            "method": f"psutil RSS of the worker + children, sampled every {self.interval * 1000:.0f} ms",
        }


def import_runtime(spec: ItemSpec) -> None:
    """Import the item's runtime code before the memory baseline (so delta = model, session, activations).

    Python imports are lazy all the way down (transformers' model classes, torch kernels), so PyTorch items
    and exports with a known source also build their model on the meta device (no weights) first.
    """
    import torch  # noqa: F401 - transformers (tokenizers) imports it anyway
    import transformers  # noqa: F401

    from edgebert.modelio import load_tokenizer

    from edgebert.modeldir import read_manifest
    from edgebert.bench.items import count_params_from_config

    target = spec.target if spec.kind == "export" else spec.kind
    try:
        tokenizer_dir = spec.tokenizer if spec.kind in ("onnx", "tflite") else spec.path
        load_tokenizer(tokenizer_dir)
        if target == "onnx":
            import onnxruntime  # noqa: F401
        elif target == "tflite":
            from ai_edge_litert import interpreter  # noqa: F401
        if spec.kind == "pytorch":
            count_params_from_config(Path(spec.path))
        elif spec.kind == "export":
            source = read_manifest(Path(spec.path)).get("parent")
            if source and Path(source).is_dir():
                count_params_from_config(Path(source))
    except Exception:  # noqa: BLE001 - open_item reports a missing runtime or a broken dir as the item's error
        pass


# ----------------------------------------------------------------------------------------- latency


def latency_texts(batch: int, seq_len: int) -> list[str]:
    """`batch` different English texts of `seq_len` words, so truncation to `seq_len` tokens fills every position."""
    words = PARITY_SENTENCES[-1].split()
    texts = []
    for row in range(batch):
        start = (7 * row) % len(words)
        texts.append(" ".join(words[(start + i) % len(words)] for i in range(seq_len)))
    return texts


def _pad_to(inputs: dict[str, np.ndarray], length: int, side: str) -> dict[str, np.ndarray]:
    """`inputs` zero-padded to `length` tokens on the tokenizer's `side` (unchanged when they are that long)."""
    if length <= inputs["input_ids"].shape[1]:
        return inputs
    return buckets.fit(inputs, length, inputs, dtype=None, side=side)


def make_tokenize(item: OpenItem, texts: list[str], seq_len: int) -> Callable[[], dict[str, np.ndarray]]:
    """tokenizer(texts) truncated to `seq_len`, padded to the item's smallest bucket that holds it (static items)."""

    def tokenize() -> dict[str, np.ndarray]:
        inputs = encode(item.tokenizer, texts, seq_len, pad_to_seq_len=True)
        return _pad_to(inputs, item.pad_length(inputs["input_ids"].shape[1]) or 0, item.tokenizer.padding_side)

    return tokenize


def measure_latency(item: OpenItem, runner: Any, seq_len: int, batch: int, threads: int, warmup: int, repeats: int) -> dict[str, Any]:
    """Latency of one configuration: model call alone, tokenizer alone, tokenizer + model."""
    config: dict[str, Any] = {"seq_len": seq_len, "batch": batch, "threads": threads}
    static = item.static_seq_len
    if static and seq_len > static:
        return {**config, "skipped": f"static export takes exactly {static} tokens"}
    tokenize = make_tokenize(item, latency_texts(batch, seq_len), seq_len)
    inputs = tokenize()
    real = int(inputs["attention_mask"].sum())
    native = type(runner).time_calls is not Runner.time_calls
    if native or item.runs_out_of_process:
        model_times = runner.time_calls(inputs, warmup, repeats)
        tok_times = timed(tokenize, warmup, repeats)
        e2e_times = [a + b for a, b in zip(tok_times, model_times)]
        e2e_method = "tokenizer time + the runtime's own model time of the same repeat (the runtime times itself)"
    else:
        # Interleaved, so that both figures see the same machine conditions (the CPU may be shared).
        for _ in range(warmup):
            runner.run(inputs)
            runner.run(tokenize())
        model_times, tok_times, e2e_times = [], [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            runner.run(inputs)
            t1 = time.perf_counter()
            fresh = tokenize()
            t2 = time.perf_counter()
            runner.run(fresh)
            t3 = time.perf_counter()
            model_times.append(t1 - t0)
            tok_times.append(t2 - t1)
            e2e_times.append(t3 - t1)
        e2e_method = "tokenizer(texts) then runner.run(inputs), timed together; interleaved with the model-only calls"
    return {
        **config,
        "computed_seq_len": int(inputs["input_ids"].shape[1]),
        "real_tokens_per_row": real // batch,
        "model_ms": summarize(model_times),
        "tokenize_ms": summarize(tok_times),
        "e2e_ms": {**summarize(e2e_times), "method": e2e_method},
        "sequences_per_s": batch / float(np.median(model_times)),
    }


# ----------------------------------------------------------------------------------------- accuracy


def sentence_batches(item: OpenItem, sentences: list[str], max_length: int, batch_size: int) -> Any:
    """(indices into `sentences`, encoded inputs) of length-sorted batches for the item's runtime (static exports:
    padded to their fixed length)."""
    static = item.static_seq_len
    length = min(max_length, static) if static else max_length
    lengths = [len(ids) for ids in item.tokenizer(sentences, truncation=True, max_length=length)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        inputs = encode(item.tokenizer, [sentences[i] for i in chunk], length, pad_to_seq_len=False)
        yield chunk, _pad_to(inputs, item.pad_length(inputs["input_ids"].shape[1]) or 0, item.tokenizer.padding_side)  # static: its smallest bucket


def embed_sentences(item: OpenItem, runner: Any, sentences: list[str], max_length: int, batch_size: int) -> np.ndarray:
    """Sentence embeddings in the item's runtime: length-sorted batches (static exports: padded rows)."""
    out: list[np.ndarray] = [None] * len(sentences)  # type: ignore[list-item]
    for chunk, inputs in sentence_batches(item, sentences, max_length, batch_size):
        vectors = np.asarray(runner.run(inputs)["sentence_embedding"], dtype=np.float32)
        for row, i in enumerate(chunk):
            out[i] = vectors[row]
    return np.stack(out)


def measure_sts(item: OpenItem, runner: Any, job: MeasureJob) -> dict[str, Any]:
    from edgebert.bench import tasks
    from edgebert.bench.metrics import load_sts_csv, sts_spearman_from_embeddings, unique_sentences

    limit = job.sts_limits.get(item.target, job.sts_limit)
    if job.sts_limit is not None and limit is not None:
        limit = min(limit, job.sts_limit)
    pairs = load_sts_csv(job.sts_path, limit=limit)
    sentences, left, right = unique_sentences(pairs)
    static = item.static_seq_len
    length = min(job.sts_max_length, static) if static else job.sts_max_length
    batch = job.sts_batch if not static else (32 if item.runs_out_of_process else 64)
    start = time.perf_counter()
    embeddings = embed_sentences(item, runner, sentences, job.sts_max_length, batch)
    seconds = time.perf_counter() - start
    truncated = tasks.truncated_count(item.tokenizer, sentences, length)
    unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    return {
        "spearman": sts_spearman_from_embeddings(embeddings, left, right, pairs.scores),
        "pairs": len(pairs),
        "limit": limit,
        "cosines": [round(float(c), 6) for c in (unit[left] * unit[right]).sum(axis=1)],
        "unique_sentences": len(sentences),
        "max_length": length,
        "truncated_sentences": truncated,
        "batch_size": batch,
        "seconds": round(seconds, 2),
        "path": str(job.sts_path),
    }


def measure_task(item: OpenItem, job: MeasureJob, result: dict[str, Any], sink: Sink) -> None:
    """The item's task metric in its own runtime: STS for embedders, accuracy for classifiers (--sst2), predictions
    to compare with the reference's for classifiers, token classifiers and fill-mask (edgebert.bench.tasks)."""
    from edgebert.bench import tasks

    stage = tasks.stage_for(item.task, job)
    if stage is None:
        missing = tasks.missing_data(item.task, job)
        if missing:
            result.setdefault("notes", []).append(missing)
        return
    result["stage"] = stage
    runner = item.make_runner(max(job.threads))
    try:
        if stage == "sts":
            result["sts"] = measure_sts(item, runner, job)
            s = result["sts"]
            log(f"{item.spec.label}: STS Spearman {s['spearman']:.4f} over {s['pairs']} pairs ({s['seconds']} s)")
        else:
            result[stage] = tasks.MEASURES[stage](item, runner, job, sentence_batches)
            log(f"{item.spec.label}: {tasks.summary(stage, result[stage])}")
    finally:
        runner.close()
    sink(result)


# ----------------------------------------------------------------------------------------- one item


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


def measure_item(spec: ItemSpec, job: MeasureJob, sink: Sink | None = None) -> dict[str, Any]:
    """Measure `spec`; `sink` gets the growing result after every stage. Errors end the item as failed."""
    sink = sink or (lambda r: None)
    result: dict[str, Any] = {"label": spec.label, "spec": spec.as_dict(), "status": "running", "stage": "load"}
    try:
        _measure(spec, job, result, sink)
        result["status"] = "ok"
    except KeyboardInterrupt:
        result["status"] = "interrupted"
        result["error"] = f"interrupted during {result.get('stage')}"
        sink(result)
        raise
    except Exception as exc:  # noqa: BLE001 - any failure is this item's, the others still run
        result["status"] = "failed"
        result["error"] = _error(exc)
        result["traceback"] = traceback.format_exc(limit=8)
    if result["status"] == "ok":
        result.pop("stage", None)
    sink(result)
    return result


def _measure(spec: ItemSpec, job: MeasureJob, result: dict[str, Any], sink: Sink) -> None:
    import_runtime(spec)
    sampler = RSSSampler()
    with sampler:
        t0 = time.perf_counter()
        item = open_item(spec)
        result.update(item.describe())
        first = item.make_runner(job.threads[0])
        result["load_s"] = round(time.perf_counter() - t0, 2)
        try:  # one call at every (seq, batch) so the memory peak covers the largest activations
            for seq_len in job.seq_lens:
                for batch in job.batches:
                    if not (item.static_seq_len and seq_len > item.static_seq_len):
                        first.run(make_tokenize(item, latency_texts(batch, seq_len), seq_len)())
        finally:
            first.close()
    result["memory"] = sampler.as_dict()
    log(f"{spec.label}: loaded in {result['load_s']} s, {item.model_bytes / 1e6:.1f} MB, peak +{result['memory']['delta_rss_mb']} MB RSS")
    sink(result)

    result["stage"] = "latency"
    result["latency"] = []
    for threads in job.threads:
        runner = item.make_runner(threads)
        try:
            for seq_len in job.seq_lens:
                for batch in job.batches:
                    entry = measure_latency(item, runner, seq_len, batch, threads, job.warmup, job.repeats)
                    result["latency"].append(entry)
                    if "skipped" in entry:
                        log(f"{spec.label}: seq {seq_len} batch {batch} threads {threads}: skipped ({entry['skipped']})")
                    else:
                        m = entry["model_ms"]
                        log(
                            f"{spec.label}: seq {seq_len} batch {batch} threads {threads}: model {m['median']:.2f} ms "
                            f"(p90 {m['p90']:.2f}), tokenizer+model {entry['e2e_ms']['median']:.2f} ms"
                        )
                    sink(result)
        finally:
            runner.close()

    _measure_app_latency(item, job, result, sink)
    measure_task(item, job, result, sink)


def _measure_app_latency(item: OpenItem, job: MeasureJob, result: dict[str, Any], sink: Sink) -> None:
    """Tokenizer + model per text over real lengths (edgebert.bench.app_latency), fixed vs buckets; skipped without texts."""
    from edgebert.bench.app_latency import measure_app_latency, read_texts

    texts = read_texts(job.texts_path, job.sts_path, job.texts_limit) if job.texts_limit > 0 else None
    if texts is None:
        return
    result["stage"] = "app_latency"
    runner = item.make_runner(job.threads[0])
    try:
        result["app_latency"] = a = measure_app_latency(item, runner, *texts, job.sts_max_length)
    finally:
        runner.close()
    modes = ", ".join(f"{m} {v['e2e_ms']['median']:.2f} ms (p90 {v['e2e_ms']['p90']:.2f})" for m, v in a["modes"].items())
    log(f"{item.spec.label}: app-like latency over {a['texts']} texts (median {a['tokens']['median']:g} tokens), "
        f"tokenized by {a['tokenizer']}: {modes}")
    if a.get("ids_differ"):
        log(f"{item.spec.label}: the app's tokenizer gives other ids than Python's on {a['ids_differ']['texts']} texts, "
            f"e.g. {a['ids_differ']['first']!r}")
    sink(result)


# ----------------------------------------------------------------------------------------- worker


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)


def die_with_parent(parent: int) -> None:
    """Make this worker exit when the harness `parent` dies, even by kill -9.

    Linux: the kernel sends SIGKILL on the parent's death (prctl PR_SET_PDEATHSIG); elsewhere a daemon thread
    polls os.getppid(). Either way, a parent that died before this call is caught by the getppid check.
    """
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = sys.platform.startswith("linux") and libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        armed = False
    if os.getppid() != parent:
        os._exit(137)
    if armed:
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(137)

    threading.Thread(target=watch, daemon=True).start()


def worker_main(argv: list[str]) -> int:
    """`python -m edgebert.bench.measure SPEC.json` (see edgebert.targets.tf_subprocess): measure one item, keep the
    spec's "result" file current."""
    from edgebert.targets.tf_subprocess import read_spec

    if os.environ.get(PARENT_ENV, "").isdigit():
        die_with_parent(int(os.environ[PARENT_ENV]))
    payload = read_spec(argv)
    spec = ItemSpec.from_dict(payload["item"])
    job = MeasureJob(**payload["job"])
    result_file = Path(payload["result"])
    try:
        measure_item(spec, job, sink=lambda r: _write_json(result_file, r))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    from edgebert.targets.tf_subprocess import apply_env

    apply_env(os.environ, tensorflow=False)
    raise SystemExit(worker_main(sys.argv[1:]))
