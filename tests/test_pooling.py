"""Pooling modes and L2 normalisation (edgebert/pooling.py) against hand-computed numpy on a padded batch."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from edgebert.pooling import (
    POOLINGS,
    SentenceEmbedder,
    pool,
)

# Two sequences of three tokens, two features; the second has one padding token whose values would win max/mean.
HIDDEN = np.array(
    [
        [[1.0, -2.0], [3.0, 0.0], [-1.0, 5.0]],
        [[2.0, 4.0], [-6.0, -1.0], [100.0, 100.0]],
    ],
    dtype=np.float32,
)
MASK = np.array([[1, 1, 1], [1, 1, 0]], dtype=np.int64)
EXPECTED = {
    "mean": np.array([[1.0, 1.0], [-2.0, 1.5]], dtype=np.float32),
    "cls": np.array([[1.0, -2.0], [2.0, 4.0]], dtype=np.float32),
    "max": np.array([[3.0, 5.0], [2.0, 4.0]], dtype=np.float32),
    "mean_sqrt_len_tokens": np.array([[3.0, 3.0], [-4.0, 3.0]], dtype=np.float32) / np.sqrt([[3.0], [2.0]], dtype=np.float32),
    "weightedmean": np.array([[4.0 / 6, 13.0 / 6], [-10.0 / 3, 2.0 / 3]], dtype=np.float32),  # weights 1, 2, 3 by position
    "lasttoken": np.array([[-1.0, 5.0], [-6.0, -1.0]], dtype=np.float32),
}


@pytest.mark.parametrize("mode", POOLINGS)
def test_pool_matches_hand_computed_values(mode: str) -> None:
    pooled = pool(torch.from_numpy(HIDDEN), torch.from_numpy(MASK), mode)
    np.testing.assert_allclose(pooled.numpy(), EXPECTED[mode], rtol=0, atol=1e-6)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown pooling 'sum'"):
        pool(torch.from_numpy(HIDDEN), torch.from_numpy(MASK), "sum")
    with pytest.raises(ValueError, match="unknown pooling 'sum'"):
        SentenceEmbedder(torch.nn.Identity(), pooling="sum")


class _FixedEncoder(torch.nn.Module):
    """Returns HIDDEN whatever the input; records the keyword arguments it was called with."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[set[str]] = []

    def forward(self, **kwargs: torch.Tensor) -> SimpleNamespace:
        self.calls.append(set(kwargs))
        return SimpleNamespace(last_hidden_state=torch.from_numpy(HIDDEN))


@pytest.mark.parametrize("mode", POOLINGS)
def test_embedder_l2_normalises_the_pooled_vector(mode: str) -> None:
    encoder = _FixedEncoder()
    ids = torch.zeros(2, 3, dtype=torch.long)
    embedding, hidden = SentenceEmbedder(encoder, pooling=mode)(ids, torch.from_numpy(MASK))
    expected = EXPECTED[mode] / np.linalg.norm(EXPECTED[mode], axis=1, keepdims=True)
    np.testing.assert_allclose(embedding.numpy(), expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(embedding.numpy(), axis=1), 1.0, atol=1e-6)
    assert torch.equal(hidden, torch.from_numpy(HIDDEN))
    assert encoder.calls == [{"input_ids", "attention_mask", "token_type_ids"}]


def test_token_type_ids_are_left_out_for_families_without_them() -> None:
    encoder = _FixedEncoder()
    SentenceEmbedder(encoder, uses_token_type_ids=False)(torch.zeros(2, 3, dtype=torch.long), torch.from_numpy(MASK))
    assert encoder.calls == [{"input_ids", "attention_mask"}]
