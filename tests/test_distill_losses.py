"""Each distillation loss against values computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from edgebert.distill.losses import (
    LossWeights,
    combine,
    cosine_loss,
    mlm_loss,
    pooled_cosine_loss,
    soft_target_loss,
)


def _softmax(xs: list[float]) -> list[float]:
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


def _kl(p: list[float], q: list[float]) -> float:
    return sum(a * (math.log(a) - math.log(b)) for a, b in zip(p, q))


def test_mlm_loss_ignores_ignore_index() -> None:
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [5.0, -5.0, 0.0]]])
    labels = torch.tensor([[0, -100, 2]])
    expected = (-math.log(math.exp(2) / (math.exp(2) + 2)) - math.log(1 / (math.exp(5) + math.exp(-5) + 1))) / 2
    assert mlm_loss(logits, labels).item() == pytest.approx(expected, rel=1e-6)


def test_mlm_loss_all_ignored_is_zero_and_differentiable() -> None:
    logits = torch.randn(2, 4, requires_grad=True)
    loss = mlm_loss(logits, torch.tensor([-100, -100]))
    loss.backward()
    assert loss.item() == 0.0


def test_soft_target_loss_is_kl_times_t_squared_averaged_over_positions() -> None:
    s = [[1.0, 2.0, 0.5], [0.0, 0.0, 3.0]]
    t = [[2.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    for temperature in (1.0, 2.0, 4.0):
        kls = [_kl(_softmax([x / temperature for x in tt]), _softmax([x / temperature for x in ss])) for ss, tt in zip(s, t)]
        expected = sum(kls) / 2 * temperature**2
        got = soft_target_loss(torch.tensor(s), torch.tensor(t), temperature)
        assert got.item() == pytest.approx(expected, rel=1e-5)


def test_soft_target_loss_mask_selects_positions() -> None:
    s = torch.tensor([[[1.0, 2.0, 0.5], [0.0, 0.0, 3.0]]])
    t = torch.tensor([[[2.0, 1.0, 0.0], [1.0, 1.0, 1.0]]])
    only_first = soft_target_loss(s[:, :1], t[:, :1], 2.0)
    masked = soft_target_loss(s, t, 2.0, mask=torch.tensor([[1, 0]]))
    assert masked.item() == pytest.approx(only_first.item(), rel=1e-6)
    assert soft_target_loss(t, t, 2.0).item() == pytest.approx(0.0, abs=1e-6)


def test_cosine_loss_over_real_tokens_only() -> None:
    s = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [7.0, 7.0]]])
    t = torch.tensor([[[0.0, 1.0], [2.0, 0.0], [-1.0, 0.0]]])
    mask = torch.tensor([[1, 1, 0]])  # last token is padding
    assert cosine_loss(s, t, mask).item() == pytest.approx((1.0 + 0.0) / 2, abs=1e-6)
    with pytest.raises(ValueError):
        cosine_loss(s, torch.zeros(1, 3, 4), mask)


def test_pooled_cosine_loss_uses_mean_pooling() -> None:
    s = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [100.0, 0.0]]])  # mean of real tokens: (0.5, 0.5)
    t = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [0.0, 100.0]]])  # mean: (1, 0)
    mask = torch.tensor([[1, 1, 0]])
    assert pooled_cosine_loss(s, t, mask).item() == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-6)


def test_combine_weights_terms_with_distilbert_defaults() -> None:
    w = LossWeights()
    assert (w.alpha_ce, w.alpha_mlm, w.alpha_cos, w.temperature) == (5.0, 2.0, 1.0, 2.0)
    total = combine({"mlm": torch.tensor(1.0), "ce": torch.tensor(2.0), "cos": torch.tensor(3.0)}, w)
    assert total.item() == pytest.approx(2.0 * 1 + 5.0 * 2 + 1.0 * 3)


def test_similarity_loss_is_the_mse_of_the_off_diagonal_cosines() -> None:
    from edgebert.distill.losses import similarity_loss

    s = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # cosines: (0,1) 0, (0,2) and (1,2) 1/√2
    t = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])  # cosines: (0,1) 1, (0,2) 0, (1,2) 0
    expected = (1.0**2 + 0.5 + 0.5) / 3  # each pair counted twice over 6 entries: (1 + 1/2 + 1/2) / 3
    assert similarity_loss(s, t).item() == pytest.approx(expected, rel=1e-6)
    assert similarity_loss(s, s * 3.0).item() == pytest.approx(0.0, abs=1e-7)  # scale-free
    assert similarity_loss(s[:1], t[:1]).item() == 0.0  # one sentence: no pair


def test_similarity_loss_trains_the_student_toward_the_teachers_structure() -> None:
    from edgebert.distill.losses import similarity_loss

    torch.manual_seed(0)
    teacher = torch.randn(6, 8)
    student = torch.randn(6, 4, requires_grad=True)
    before = similarity_loss(student, teacher).item()
    opt = torch.optim.SGD([student], lr=0.5)
    for _ in range(200):
        opt.zero_grad()
        similarity_loss(student, teacher).backward()
        opt.step()
    assert similarity_loss(student, teacher).item() < before / 10


def test_pooled_cosine_matches_the_hidden_state_form() -> None:
    from edgebert.distill.losses import mean_pool, pooled_cosine

    torch.manual_seed(1)
    s, t = torch.randn(2, 5, 4), torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert pooled_cosine(mean_pool(s, mask), mean_pool(t, mask)).item() == pytest.approx(pooled_cosine_loss(s, t, mask).item(), rel=1e-6)
