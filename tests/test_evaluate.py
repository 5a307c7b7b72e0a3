"""STS Spearman: the rank correlation itself and the embedding pipeline on a tiny BERT."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebert.data import STSPairs
from edgebert.evaluate import embed, rankdata, spearman, sts_spearman


def test_rankdata_averages_ties() -> None:
    assert rankdata([10, 20, 20, 5]).tolist() == [2.0, 3.5, 3.5, 1.0]


def test_spearman_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = x + rng.normal(size=200)
    y[:20] = 1.0  # ties
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_sts_spearman_on_tiny_bert(tiny_bert: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(tiny_bert)
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    s = ["the dog plays", "a cat", "hello world", "the quick brown fox"]
    vecs = embed(model, tok, s, batch_size=3)
    assert vecs.shape == (4, 32) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # identical pairs have cosine 1, the highest: gold that ranks them top correlates strongly
    pairs = STSPairs(s + s[:2], s + s[2:], [5, 5, 5, 5, 0, 0])
    rho = sts_spearman(model, tok, pairs)
    assert rho > 0.8
