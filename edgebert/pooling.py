"""Sentence pooling and the `SentenceEmbedder` module that every exporter traces."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

POOLINGS = ("mean", "cls", "max")


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


def pooling_from_sentence_transformers(model_dir: Path) -> str | None:
    """Read the pooling mode of a sentence-transformers directory (1_Pooling/config.json), if any."""
    modules = Path(model_dir) / "modules.json"
    candidates = [Path(model_dir) / "1_Pooling" / "config.json"]
    if modules.exists():
        for module in json.loads(modules.read_text()):
            if module.get("type", "").endswith("Pooling"):
                candidates.insert(0, Path(model_dir) / module.get("path", "") / "config.json")
    for path in candidates:
        if path.exists():
            cfg = json.loads(path.read_text())
            if cfg.get("pooling_mode_cls_token"):
                return "cls"
            if cfg.get("pooling_mode_max_tokens"):
                return "max"
            if cfg.get("pooling_mode_mean_tokens"):
                return "mean"
    return None


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
