"""Distillation: a BERT teacher into a DistilBERT- or TinyBERT-shaped student (`distill(...)`, `edgebert distill`)."""

from __future__ import annotations

from typing import Any

__all__ = ["distill", "DistillReport"]


def __getattr__(name: str) -> Any:  # lazy: `import edgebert.distill` must not import torch/transformers
    if name in ("distill", "DistillReport"):
        from edgebert.distill import api

        return getattr(api, name)
    raise AttributeError(name)
