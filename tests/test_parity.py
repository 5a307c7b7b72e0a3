"""`edgebert.parity.compare`: what is held to the threshold for each kind of output."""

from __future__ import annotations

import numpy as np
import pytest

from edgebert.parity import compare, label_scores

MASK = np.ones((2, 4), dtype=np.int64)


def _logits(rows: list[list[float]]) -> dict[str, np.ndarray]:
    return {"logits": np.array(rows, dtype=np.float32)}


def test_a_near_tie_that_int8_moves_is_scored_on_probabilities_not_on_the_logit_direction() -> None:
    # measured: a distilled SST-2 student, ONNX int8, one parity sentence (logits ~0 -> the direction is arbitrary)
    ref, got = _logits([[0.013, 0.012], [-1.257, 1.647]]), _logits([[-0.045, 0.085], [-1.261, 1.653]])
    report = compare(ref, got, MASK, 0.99)
    raw = ref["logits"][0] @ got["logits"][0] / np.linalg.norm(ref["logits"][0]) / np.linalg.norm(got["logits"][0])
    assert raw < 0.3  # what the old check held to 0.99
    assert report.passed and report.min_cosine == pytest.approx(0.99786, abs=1e-4)
    assert report.agreement == 0.5 and report.outputs["logits"]["max_abs_diff"] == pytest.approx(0.073, abs=1e-3)


def test_a_confident_flip_or_a_shift_free_drift_still_fails() -> None:
    flip = compare(_logits([[3.0, -3.0], [1.0, 0.0]]), _logits([[-3.0, 3.0], [1.0, 0.0]]), MASK, 0.99)
    assert not flip.passed and flip.min_cosine < 0.1
    drift = compare(_logits([[2.0, 0.0, -2.0], [0, 0, 0]]), _logits([[0.5, 0.0, -0.5], [0, 0, 0]]), MASK, 0.99)
    assert not drift.passed  # the logits point the same way (cosine 1.0), the probabilities do not
    shift = compare(_logits([[2.0, 0.0], [1.0, 1.0]]), _logits([[7.0, 5.0], [-3.0, -3.0]]), MASK, 0.9999)
    assert shift.passed  # softmax ignores a common shift: the same probabilities


def test_multi_label_heads_are_scored_per_label_sigmoid() -> None:
    ref, got = _logits([[4.0, -4.0], [0.0, 0.0]]), _logits([[9.0, -9.0], [0.0, 0.0]])
    softmaxed = compare(ref, got, MASK, 0.9999)
    per_label = compare(ref, got, MASK, 0.9999, "multi_label_classification")
    assert per_label.min_cosine < softmaxed.min_cosine
    assert label_scores(np.array([0.0, 0.0]), "multi_label_classification").tolist() == [0.5, 0.5]


def test_a_regression_head_is_held_to_its_relative_error() -> None:
    ref = _logits([[4.2], [0.3]])
    close, off = _logits([[4.19], [0.31]]), _logits([[3.8], [0.3]])
    assert compare(ref, close, MASK, 0.99).passed
    report = compare(ref, off, MASK, 0.99)
    assert not report.passed and report.min_cosine == pytest.approx(1 - 0.4 / 4.2, abs=1e-6)  # same sign, 10 % off


def test_token_logits_are_compared_on_real_tokens_only() -> None:
    mask = np.array([[1, 1, 0, 0]])
    ref = {"logits": np.array([[[2.0, -1.0], [0.0, 1.0], [5.0, 5.0], [9.0, -9.0]]])}
    got = {"logits": np.array([[[2.0, -1.0], [0.0, 1.0], [-9.0, 9.0], [0.0, 0.0]]])}  # padding rows differ
    assert compare(ref, got, mask, 0.9999).passed


def test_merged_reports_keep_every_row_for_the_spread() -> None:
    from edgebert.parity import compare, merge_reports

    rng = np.random.default_rng(1)
    parts = []
    for _ in range(3):
        ref = rng.normal(size=(40, 8))
        parts.append(compare({"sentence_embedding": ref}, {"sentence_embedding": ref + rng.normal(scale=0.3, size=ref.shape)}, np.ones((40, 4)), 0.5))
    merged = merge_reports(parts)
    rows = np.concatenate([p.cosines for p in parts])
    assert len(merged.cosines) == 120 and merged.min_cosine == rows.min()
    assert merged.as_dict()["p1_cosine"] == pytest.approx(np.percentile(rows, 1)) and "cosines" not in merged.as_dict()
