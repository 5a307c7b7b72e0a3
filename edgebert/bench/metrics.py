"""Accuracy metrics for bench items and the arithmetic of the comparison (retention, speed-up, Pareto front).

STS: cosine of the item's sentence embeddings vs the gold scores, Spearman via `edgebert.evaluate.spearman`
(the project's one implementation, checked against scipy in tests); pairs read by `edgebert.data.load_sts_csv`.
SST-2: accuracy of a sequence-classification head, for classifier model dirs only.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgebert.data import STSPairs, load_sts_csv
from edgebert.errors import UserError
from edgebert.evaluate import spearman

__all__ = [
    "STSPairs",
    "load_sts_csv",
    "sts_spearman_from_embeddings",
    "unique_sentences",
    "SST2Set",
    "load_sst2_tsv",
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


@dataclass
class SST2Set:
    """Sentences with binary sentiment labels (0 negative, 1 positive)."""

    texts: list[str]
    labels: list[int]

    def __len__(self) -> int:
        return len(self.labels)


def load_sst2_tsv(path: str | Path, limit: int | None = None) -> SST2Set:
    """A GLUE SST-2 style TSV with a header naming a text column (`sentence` or `text`) and `label`."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"SST-2 file {path} does not exist; pass a TSV with a header 'sentence<TAB>label'")
    texts: list[str] = []
    labels: list[int] = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = [h.strip().lower() for h in next(reader, [])]
        text_col = next((header.index(c) for c in ("sentence", "text") if c in header), None)
        if text_col is None or "label" not in header:
            raise UserError(f"{path}: expected a header with 'sentence' (or 'text') and 'label', got {header}")
        label_col = header.index("label")
        for lineno, row in enumerate(reader, start=2):
            if len(row) <= max(text_col, label_col):
                continue
            try:
                label = int(row[label_col])
            except ValueError as exc:
                raise UserError(f"{path}:{lineno}: label '{row[label_col]}' is not 0 or 1") from exc
            texts.append(row[text_col].strip())
            labels.append(label)
            if limit is not None and len(labels) >= limit:
                break
    if not labels:
        raise UserError(f"SST-2 file {path} has no labelled rows")
    return SST2Set(texts, labels)


def classifier_label_map(id2label: dict[int, str] | None) -> Callable[[int], int]:
    """Map a classifier's predicted id to SST-2's 0/1, by label name when the head names them."""
    names = {int(k): str(v).lower() for k, v in (id2label or {}).items()}
    if names and all(any(w in n for w in ("neg", "pos")) for n in names.values()):
        return lambda i: 1 if "pos" in names[int(i)] else 0
    return lambda i: int(i)


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
