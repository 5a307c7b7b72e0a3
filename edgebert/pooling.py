"""Sentence pooling and the `SentenceEmbedder` module that every exporter traces."""

from __future__ import annotations

import torch
from torch import nn

from edgebert.modeldir import POOLING_MODES as POOLINGS


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, mode: str) -> torch.Tensor:
    """Pool token states [B, T, H] into sentence vectors [B, H] over the unmasked tokens."""
    if mode == "cls":
        return hidden[:, 0]
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    if mode == "mean":
        summed = (hidden * mask).sum(dim=1)
        return summed / mask.sum(dim=1).clamp(min=1e-9)
    if mode == "max":
        return (hidden + (1.0 - mask) * -1e9).max(dim=1).values
    raise ValueError(f"unknown pooling '{mode}'; expected one of {POOLINGS}")


class SentenceEmbedder(nn.Module):
    """Encoder + pooling + L2 normalisation: returns (sentence_embedding, last_hidden_state)."""

    def __init__(self, encoder: nn.Module, pooling: str = "mean", uses_token_type_ids: bool = True) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling '{pooling}'; expected one of {POOLINGS}")
        self.encoder = encoder
        self.pooling = pooling
        self.uses_token_type_ids = uses_token_type_ids

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.uses_token_type_ids:
            kwargs["token_type_ids"] = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        hidden = self.encoder(**kwargs).last_hidden_state
        pooled = pool(hidden, attention_mask, self.pooling)
        return nn.functional.normalize(pooled, p=2.0, dim=-1), hidden
