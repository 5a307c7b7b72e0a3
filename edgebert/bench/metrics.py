"""Accuracy metrics for bench items and the arithmetic of the comparison (retention, speed-up, Pareto front).

STS: cosine of the item's sentence embeddings vs the gold scores, Spearman via `edgebert.evaluate.spearman`
(the project's one implementation, checked against scipy in tests); pairs read by `edgebert.data.load_sts_csv`.
Task metrics of classifiers, fill-mask and token-classification items: edgebert.bench.tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgebert.data import STSPairs, load_sts_csv
from edgebert.evaluate import spearman

__all__ = [
    "STSPairs",
    "load_sts_csv",
    "sts_spearman_from_embeddings",
    "unique_sentences",
    "ratio",
    "pareto_front",
]


def unique_sentences(pairs: STSPairs) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The distinct sentences of `pairs` and, per pair, the index of each side in that list."""
    index: dict[str, int] = {}
    for s in [*pairs.sentences1, *pairs.sentences2]:
        index.setdefault(s, len(index))
    left = np.array([index[s] for s in pairs.sentences1], dtype=np.int64)
    right = np.array([index[s] for s in pairs.sentences2], dtype=np.int64)
    return list(index), left, right


def sts_spearman_from_embeddings(embeddings: np.ndarray, left: np.ndarray, right: np.ndarray, scores: Sequence[float]) -> float:
    """Spearman of cosine(emb[left], emb[right]) against the gold `scores`."""
    emb = np.asarray(embeddings, dtype=np.float64)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    cosines = (emb[left] * emb[right]).sum(axis=1)
    return spearman(cosines, list(scores))


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None when either is missing, not finite, or the denominator is 0."""
    if numerator is None or denominator is None:
        return None
    if not np.isfinite(numerator) or not np.isfinite(denominator) or denominator == 0:
        return None
    return float(numerator) / float(denominator)


def pareto_front(points: Sequence[tuple[float, ...]], maximize: Sequence[bool]) -> list[bool]:
    """For each point, whether no other point is at least as good in every objective and better in one."""
    signs = np.array([-1.0 if m else 1.0 for m in maximize])  # turn every objective into "smaller is better"
    values = np.array(points, dtype=np.float64) * signs if len(points) else np.zeros((0, len(maximize)))
    front = []
    for i, p in enumerate(values):
        dominated = any(np.all(q <= p) and np.any(q < p) for j, q in enumerate(values) if j != i)
        front.append(not dominated)
    return front


def summarize(seconds: list[float]) -> dict[str, Any]:
    """median / p90 / mean / min / max / std in milliseconds, plus the raw samples."""
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "median": float(np.median(ms)),
        "p90": float(np.percentile(ms, 90)),
        "mean": float(ms.mean()),
        "min": float(ms.min()),
        "max": float(ms.max()),
        "std": float(ms.std()),
        "n": int(ms.size),
        "raw": [round(float(x), 4) for x in ms],
    }
