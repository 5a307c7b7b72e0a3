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


def test_static_references_are_each_text_alone_at_its_own_length(tiny_bert) -> None:
    """A static program's parity reference is the model on each text unpadded: equal (to float noise) to the padded
    computation for a model that masks its padding, token outputs at the padded positions of the feed. (Left padding
    is a family's, XLNet's: its export tests cover it; a BERT padded on the left moves its positions.)"""
    from edgebert.modelio import load_model
    from edgebert.parity import encode, natural_references, torch_references

    loaded = load_model(tiny_bert)
    texts = ["hello world", "the quick brown fox jumps over the lazy dog", "a cat"]
    feeds = [encode(loaded.tokenizer, texts, 16, pad_to_seq_len=True), encode(loaded.tokenizer, texts[:1], 8, pad_to_seq_len=True)]
    natural, padded = natural_references(loaded.embedder, feeds), torch_references(loaded.embedder, feeds)
    for feed, mine, theirs in zip(feeds, natural, padded):
        assert mine["sentence_embedding"].shape == theirs["sentence_embedding"].shape
        np.testing.assert_allclose(mine["sentence_embedding"], theirs["sentence_embedding"], atol=1e-5)
        real = feed["attention_mask"].astype(bool)
        np.testing.assert_allclose(mine["last_hidden_state"][real], theirs["last_hidden_state"][real], atol=1e-5)
        assert not mine["last_hidden_state"][~real].any()


def test_a_model_that_reads_its_padding_is_judged_against_itself_unpadded() -> None:
    """Padding that changes a model's answer is the export's doing: the reference does not pad."""
    import torch

    from edgebert.parity import natural_references

    class SumsEverything(torch.nn.Module):
        output_names = ("sentence_embedding",)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor]:
            return (torch.stack([input_ids.shape[1] * torch.ones(len(input_ids)), attention_mask.sum(1).float()], 1),)

    feed = {"input_ids": np.array([[5, 6, 0, 0], [5, 6, 7, 8]]), "attention_mask": np.array([[1, 1, 0, 0], [1, 1, 1, 1]])}
    (reference,) = natural_references(SumsEverything(), [feed])
    np.testing.assert_array_equal(reference["sentence_embedding"], [[2, 2], [4, 4]])
