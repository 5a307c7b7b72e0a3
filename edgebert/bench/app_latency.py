"""Latency as an app sees it: one text at a time, tokenizer + model, over real sentence lengths.

The texts are `--texts FILE` (one per line) or the STS sentences, each at its own length (truncated to the
item's longest input). Dynamic-shape items (PyTorch, ONNX) compute the tokens they get (`natural`); static-shape
exports are timed twice per text, interleaved so both see the same machine: padded to their longest length
(`fixed`, what a single-shape export costs) and to the smallest bucket that holds the text (`buckets`; the same as
`fixed` for an export with one length). Reported as median and p90 over the texts.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebert import buckets
from edgebert.bench.items import OpenItem
from edgebert.parity import encode
from edgebert.targets.base import Runner

WARMUP_TEXTS = 3  # untimed texts per mode before timing (first calls allocate, compile shaders, fill caches)


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


def _one_call(item: OpenItem, runner: Runner, text: str, max_length: int, pad: Any) -> tuple[float, float]:
    """(tokenizer seconds, model seconds) of one text padded to `pad(tokens)`."""
    native = type(runner).time_calls is not Runner.time_calls
    start = time.perf_counter()
    inputs = encode(item.tokenizer, [text], max_length, pad_to_seq_len=False)
    width = pad(inputs["input_ids"].shape[1])
    inputs = {k: buckets.pad_right(v, width) for k, v in inputs.items()}
    tokenized = time.perf_counter()
    if native or item.runs_out_of_process:
        return tokenized - start, runner.time_calls(inputs, 0, 1)[0]  # the runtime times itself (TF.js in Node)
    runner.run(inputs)
    return tokenized - start, time.perf_counter() - tokenized


def measure_app_latency(item: OpenItem, runner: Runner, texts: list[str], source: str, max_length: int) -> dict[str, Any]:
    """Tokenizer + model per text for each mode of the item: median / p90 (ms) over `texts`, and fixed / buckets."""
    from edgebert.bench.metrics import summarize

    longest = min(max_length, max(item.buckets)) if item.buckets else max_length
    modes = _modes(item)
    for text in texts[:WARMUP_TEXTS]:
        for pad in modes.values():
            _one_call(item, runner, text, longest, pad)
    times: dict[str, dict[str, list[float]]] = {m: {"tokenize": [], "model": [], "e2e": []} for m in modes}
    for text in texts:
        for mode, pad in modes.items():
            tok, model = _one_call(item, runner, text, longest, pad)
            for key, value in (("tokenize", tok), ("model", model), ("e2e", tok + model)):
                times[mode][key].append(value)
    tokens = np.asarray([len(ids) for ids in item.tokenizer(texts, truncation=True, max_length=longest)["input_ids"]])
    result: dict[str, Any] = {
        "source": source,
        "texts": len(texts),
        "max_length": longest,
        "tokens": {"median": float(np.median(tokens)), "p90": float(np.percentile(tokens, 90)), "max": int(tokens.max())},
        "modes": {m: {f"{k}_ms": summarize(v) for k, v in t.items()} for m, t in times.items()},
    }
    if "buckets" in times and len(item.buckets) > 1:
        fixed, bucketed = (result["modes"][m]["e2e_ms"]["median"] for m in ("fixed", "buckets"))
        result["bucket_speedup_e2e"] = fixed / bucketed
        result["bucket_counts"] = {str(b): int(sum(item.pad_length(int(n)) == b for n in tokens)) for b in item.buckets}
        result["at_median_length"] = at_median_length(item, times, tokens)
    return result


def at_median_length(item: OpenItem, times: dict[str, dict[str, list[float]]], tokens: np.ndarray) -> dict[str, Any]:
    """Fixed vs buckets for the texts of the median token count (what "a median-length sentence costs"): per text, the
    ratio of its two interleaved timings; the median of those ratios. Over all texts the buckets' times are a mixture
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
