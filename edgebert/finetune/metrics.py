"""How well a model does on the held-out rows, the figure every candidate is chosen by.

- scored rows: Spearman of the two sentences' cosine against the score (rank-based, like the losses: any scale);
- unscored rows: the mean reciprocal rank of each anchor's own positive among every held-out positive and negative
  (1: each anchor's positive is its nearest; smoother than top-1 accuracy on a small held-out slice).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgebert.finetune.data import Rows

BATCH = 64


def metric_name(rows: Rows) -> str:
    return "spearman" if rows.scores is not None else "mrr"


def score(model: Any, rows: Rows) -> float | None:
    """The held-out figure of `model` (a SentenceTransformer) on `rows`, rounded; None when undefined (constant cosines)."""
    value = _spearman(model, rows) if rows.scores is not None else _mrr(model, rows)
    return round(value, 6) if math.isfinite(value) else None


def _embed(model: Any, texts: list[str]) -> np.ndarray:
    return model.encode(texts, batch_size=BATCH, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)


def _spearman(model: Any, rows: Rows) -> float:
    from edgebert.evaluate import spearman

    cosines = (_embed(model, rows.sentence1) * _embed(model, rows.sentence2)).sum(axis=1)
    return spearman(cosines, rows.scores)


def _mrr(model: Any, rows: Rows) -> float:
    candidates = list(dict.fromkeys(rows.sentence2 + (rows.negatives or [])))
    index = {text: i for i, text in enumerate(candidates)}
    similarity = _embed(model, rows.sentence1) @ _embed(model, candidates).T
    own = similarity[np.arange(len(rows)), [index[text] for text in rows.sentence2]]
    ranks = 1 + (similarity > own[:, None]).sum(axis=1)
    return float((1.0 / ranks).mean())
