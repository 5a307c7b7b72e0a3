"""Latency as an app sees it: one text at a time, tokenizer + model, over real sentence lengths.

The texts are `--texts FILE` (one per line) or the STS sentences, each at its own length (truncated to the
item's longest input), tokenized as an app of the item's runtime does: in JS for TF.js (in Node, the demo app's
tokenizer), else by the model's Rust tokenizer called directly (`app_tokenizer`); either way the ids are checked
against transformers' call. Dynamic-shape items (PyTorch, ONNX) compute the tokens they get (`natural`); static-shape
exports are timed twice per text: padded to their longest length (`fixed`, what a single-shape export costs) and to
the smallest bucket that holds the text (`buckets`; the same as `fixed` for an export with one length). Reported as
median and p90 over the texts.

The two modes alternate in runs of `RUN_TEXTS` texts (`schedule`), each run opened by one untimed call: both modes see
the same machine, and each timed call follows a call of its own mode, as in an app that uses one of them. Alternating
every text instead makes each bucketed call follow a 128-token one, whose tensors it finds in the caches: the `small`
student's 16-token call took 4.53 ms after a 128-token call against 4.29 ms after its own
(`benchmarks/results/buckets-student/bucket-curve.txt`), an app with buckets never pays that.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebert import buckets
from edgebert.bench.app_tokenizer import AppTokenizer
from edgebert.bench.items import OpenItem
from edgebert.parity import encode
from edgebert.targets.base import Runner

WARMUP_TEXTS = 3  # untimed texts per mode before timing (first calls allocate, compile shaders, fill caches)
RUN_TEXTS = 10  # texts timed in a row in one mode before the other mode's run of the same texts

Schedule = list[tuple[str, list[int]]]  # (mode, text indices) runs, in order


def schedule(count: int, modes: list[str], run: int = RUN_TEXTS) -> Schedule:
    """Runs of `run` texts, every mode over each run's texts in turn, the first mode alternating (ABBA): each text is
    timed once per mode, its timings a few calls apart."""
    runs: Schedule = []
    for k, start in enumerate(range(0, count, run)):
        indices = list(range(start, min(start + run, count)))
        runs += [(mode, indices) for mode in (modes if k % 2 == 0 else modes[::-1])]
    return runs


def read_texts(path: str | None, sts_path: str | None, limit: int) -> tuple[list[str], str] | None:
    """`limit` distinct non-empty texts of `path` (one per line, .gz ok) or of the STS pairs, evenly spaced over the
    file (STS-B is ordered by genre: its first sentences are short captions, median 9 tokens against 14 over all of
    dev); None if neither."""
    from edgebert.data import evenly_spaced, load_corpus

    if path:
        texts, source = load_corpus(path), str(path)
    elif sts_path:
        from edgebert.bench.metrics import load_sts_csv, unique_sentences

        texts, source = unique_sentences(load_sts_csv(sts_path))[0], f"STS sentences of {sts_path}"
    else:
        return None
    kept = evenly_spaced(list(dict.fromkeys(t.strip() for t in texts if t.strip())), limit)
    return (kept, source) if kept else None


def _modes(item: OpenItem) -> dict[str, Any]:
    """{mode: pad length for a text of n tokens}: natural (dynamic), or fixed and buckets (static)."""
    if not item.buckets:
        return {"natural": lambda n: n}
    longest = max(item.buckets)
    return {"fixed": lambda n: longest, "buckets": item.pad_length}


def _one_call(item: OpenItem, runner: Runner, tokenize: AppTokenizer, text: str, pad: Any) -> tuple[float, float]:
    """(tokenizer seconds, model seconds) of one text padded to `pad(tokens)`."""
    native = type(runner).time_calls is not Runner.time_calls
    start = time.perf_counter()
    inputs = tokenize(text)
    width = pad(inputs["input_ids"].shape[1])
    inputs = buckets.fit(inputs, width, inputs, dtype=None, side=item.tokenizer.padding_side)
    tokenized = time.perf_counter()
    if native or item.runs_out_of_process:
        return tokenized - start, runner.time_calls(inputs, 0, 1)[0]  # the runtime times itself (TF.js in Node)
    runner.run(inputs)
    return tokenized - start, time.perf_counter() - tokenized


Timings = dict[str, dict[str, list[float]]]  # {mode: {"tokenize": [s per text], "model": [s per text]}}
Encoded = dict[str, np.ndarray]  # one text's [1, T] arrays (parity.encode)


def _in_python(item: OpenItem, runner: Runner, texts: list[str], reference: list[Encoded], longest: int) -> tuple[str, Timings]:
    """Tokenized here (the Rust tokenizer called directly, as an app's native one; transformers' call if its arrays
    differ from `reference`), the modes timed in alternating runs (`schedule`)."""
    tokenize = AppTokenizer(item.tokenizer, longest)
    differs = tokenize.check(texts, reference)
    modes = _modes(item)
    for text in texts[:WARMUP_TEXTS]:
        for pad in modes.values():
            _one_call(item, runner, tokenize, text, pad)
    timed: dict[str, dict[int, tuple[float, float]]] = {m: {} for m in modes}
    for mode, indices in schedule(len(texts), list(modes)):
        _one_call(item, runner, tokenize, texts[indices[0]], modes[mode])  # untimed: after the other mode's run
        for i in indices:
            timed[mode][i] = _one_call(item, runner, tokenize, texts[i], modes[mode])
    times: Timings = {m: {"tokenize": [t[i][0] for i in range(len(texts))], "model": [t[i][1] for i in range(len(texts))]} for m, t in timed.items()}
    name = tokenize.name if differs is None else f"{tokenize.name} (the Rust tokenizer's ids differ on {differs!r})"
    return name, times


def _in_runtime(
    item: OpenItem, runner: Runner, texts: list[str], reference: list[Encoded], longest: int
) -> tuple[str, Timings, list[str]] | None:
    """Tokenized and timed in the runtime's own language (TF.js: JS in Node, as the demo app); with the texts whose
    ids differ from `reference`'s. None when the runtime has no tokenizer of its own, or the bench truncates shorter
    than the export (`--sts-max-length` below its longest bucket)."""
    if not item.buckets or longest != max(item.buckets):
        return None
    answer = runner.time_texts(texts, schedule(len(texts), list(_modes(item))), WARMUP_TEXTS)
    if answer is None:
        return None
    differ = [t for t, ids, ref in zip(texts, answer["ids"], reference) if ids != ref["input_ids"][0].tolist()]
    times = {m: {"tokenize": t["tokenize_s"], "model": t["model_s"]} for m, t in answer["times"].items()}
    return answer["tokenizer"], times, differ


def measure_app_latency(item: OpenItem, runner: Runner, texts: list[str], source: str, max_length: int) -> dict[str, Any]:
    """Tokenizer + model per text for each mode of the item: median / p90 (ms) over `texts`, and fixed / buckets."""
    from edgebert.bench.metrics import summarize

    longest = min(max_length, max(item.buckets)) if item.buckets else max_length
    reference = [encode(item.tokenizer, [t], longest, pad_to_seq_len=False) for t in texts]  # transformers' arrays
    tokens = np.asarray([r["input_ids"].shape[1] for r in reference])
    in_runtime = _in_runtime(item, runner, texts, reference, longest)
    tokenizer, times, differ = in_runtime if in_runtime else (*_in_python(item, runner, texts, reference, longest), [])
    for t in times.values():
        t["e2e"] = [a + b for a, b in zip(t["tokenize"], t["model"])]
    result: dict[str, Any] = {
        "source": source,
        "texts": len(texts),
        "max_length": longest,
        "tokenizer": tokenizer,
        "tokens": {"median": float(np.median(tokens)), "p90": float(np.percentile(tokens, 90)), "max": int(tokens.max())},
        "modes": {m: {f"{k}_ms": summarize(v) for k, v in t.items()} for m, t in times.items()},
    }
    if differ:  # the app's tokenizer is not Python's on these texts: its ids, and so its answers, differ
        result["ids_differ"] = {"texts": len(differ), "first": differ[0]}
    if "buckets" in times and len(item.buckets) > 1:
        fixed, bucketed = (result["modes"][m]["e2e_ms"]["median"] for m in ("fixed", "buckets"))
        result["bucket_speedup_e2e"] = fixed / bucketed
        result["bucket_counts"] = {str(b): int(sum(item.pad_length(int(n)) == b for n in tokens)) for b in item.buckets}
        result["at_median_length"] = at_median_length(item, times, tokens)
    return result


def at_median_length(item: OpenItem, times: dict[str, dict[str, list[float]]], tokens: np.ndarray) -> dict[str, Any]:
    """Fixed vs buckets for the texts of the median token count (what "a median-length sentence costs"): per text, the
    ratio of its two timings (one run apart); the median of those ratios. Over all texts the buckets' times are a mixture
    of a few graphs, and their median falls on whichever graph holds the middle text."""
    length = int(np.sort(tokens)[len(tokens) // 2])
    at = np.flatnonzero(tokens == length)
    fixed, bucketed = times["fixed"], times["buckets"]
    ratio = {k: [fixed[k][i] / bucketed[k][i] for i in at] for k in ("e2e", "model")}
    return {
        "tokens": length,
        "texts": int(len(at)),
        "bucket": int(item.pad_length(length)),
        "fixed_e2e_ms": float(np.median([fixed["e2e"][i] for i in at]) * 1e3),
        "buckets_e2e_ms": float(np.median([bucketed["e2e"][i] for i in at]) * 1e3),
        "speedup_e2e": float(np.median(ratio["e2e"])),
        "speedup_model": float(np.median(ratio["model"])),
    }
