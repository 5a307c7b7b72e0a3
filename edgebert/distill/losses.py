"""Distillation losses, with DistilBERT's names and default weights.

- alpha_mlm: masked-LM cross-entropy of the student against the true tokens (ignore index -100).
- alpha_ce:  KL(softmax(teacher/T) || softmax(student/T)) × T², averaged over the scored positions.
- alpha_cos: 1 − cosine between student and teacher hidden states over real (non-pad) tokens, through a
             learned projection when the widths differ.
- alpha_pooled: 1 − cosine between mean-pooled sentence embeddings (what embedding users care about).
- alpha_sim: MSE between the student's and the teacher's in-batch cosine-similarity matrices of the pooled
             embeddings (off-diagonal pairs): the similarity structure STS and retrieval read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch.nn import functional as F

from edgebert.config import ALPHA_SIM, TEMPERATURE, TRIPLE_LOSS

IGNORE_INDEX = -100
TERMS = ("mlm", "ce", "cos", "pooled", "sim")


@dataclass
class LossWeights:
    """Weights of each term and the softmax temperature (defaults: DistilBERT's recipe; pooled off)."""

    alpha_mlm: float = TRIPLE_LOSS["alpha_mlm"]
    alpha_ce: float = TRIPLE_LOSS["alpha_ce"]
    alpha_cos: float = TRIPLE_LOSS["alpha_cos"]
    alpha_pooled: float = TRIPLE_LOSS["alpha_pooled"]
    temperature: float = TEMPERATURE
    alpha_sim: float = ALPHA_SIM

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def weight(self, term: str) -> float:
        return float(getattr(self, f"alpha_{term}"))


def mlm_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Mean cross-entropy over positions whose label is not `ignore_index` (logits [..., V], labels [...])."""
    logits = logits.reshape(-1, logits.size(-1)).float()
    labels = labels.reshape(-1)
    if not (labels != ignore_index).any():
        return logits.sum() * 0.0
    return F.cross_entropy(logits, labels, ignore_index=ignore_index)


def soft_target_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    temperature: float = 2.0,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """KL(softmax(t/T) || softmax(s/T)) · T², summed over the vocabulary, averaged over (masked) positions."""
    v = student_logits.size(-1)
    s = student_logits.reshape(-1, v).float()
    t = teacher_logits.reshape(-1, v).float()
    if mask is not None:
        keep = mask.reshape(-1).bool()
        s, t = s[keep], t[keep]
    if s.size(0) == 0:
        return student_logits.sum() * 0.0
    log_p_s = F.log_softmax(s / temperature, dim=-1)
    log_p_t = F.log_softmax(t / temperature, dim=-1)
    kl = F.kl_div(log_p_s, log_p_t, reduction="batchmean", log_target=True)
    return kl * temperature**2


def cosine_loss(student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of 1 − cos(student_token, teacher_token) over tokens where attention_mask is 1 ([B, T, H] each)."""
    if student_hidden.shape != teacher_hidden.shape:
        raise ValueError(
            f"cosine_loss needs equal shapes, got {tuple(student_hidden.shape)} vs {tuple(teacher_hidden.shape)}; "
            "project the student first"
        )
    keep = attention_mask.reshape(-1).bool()
    h = student_hidden.size(-1)
    s = student_hidden.reshape(-1, h)[keep].float()
    t = teacher_hidden.reshape(-1, h)[keep].float()
    if s.size(0) == 0:
        return student_hidden.sum() * 0.0
    return (1.0 - F.cosine_similarity(s, t, dim=-1)).mean()


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def pooled_cosine_loss(
    student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """Mean over sentences of 1 − cos(mean-pooled student, mean-pooled teacher)."""
    return pooled_cosine(mean_pool(student_hidden.float(), attention_mask), mean_pool(teacher_hidden.float(), attention_mask))


def pooled_cosine(student_pooled: torch.Tensor, teacher_pooled: torch.Tensor) -> torch.Tensor:
    """Mean over sentences of 1 − cos(student, teacher) for pooled embeddings [B, H] each."""
    return (1.0 - F.cosine_similarity(student_pooled.float(), teacher_pooled.float(), dim=-1)).mean()


def similarity_matrix(pooled: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every pair of rows of `pooled` [B, H] → [B, B]."""
    unit = F.normalize(pooled.float(), dim=-1)
    return unit @ unit.T


def similarity_loss(student_pooled: torch.Tensor, teacher_pooled: torch.Tensor) -> torch.Tensor:
    """MSE between the in-batch cosine-similarity matrices of the student's [B, Hs] and the teacher's [B, Ht]
    pooled embeddings, over the B·(B−1) off-diagonal pairs (the diagonal is 1 on both sides); widths may differ.
    0 for a batch of one sentence."""
    b = student_pooled.size(0)
    if b < 2:
        return student_pooled.sum() * 0.0
    off = ~torch.eye(b, dtype=torch.bool, device=student_pooled.device)
    diff = similarity_matrix(student_pooled) - similarity_matrix(teacher_pooled)
    return diff[off].pow(2).mean()


def combine(terms: dict[str, torch.Tensor], weights: LossWeights) -> torch.Tensor:
    """Σ alpha_term · term over the terms present (terms with weight 0 are skipped, not computed)."""
    total = None
    for name, value in terms.items():
        part = weights.weight(name) * value
        total = part if total is None else total + part
    if total is None:
        raise ValueError("no loss term to combine")
    return total
