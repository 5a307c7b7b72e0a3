"""Supervised fine-tuning of a sentence embedder on labelled pairs (`finetune(...)`, `edgebert finetune`)."""

from __future__ import annotations

from typing import Any

__all__ = ["finetune", "FinetuneReport"]


def __getattr__(name: str) -> Any:  # lazy: `import edgebert.finetune` must not import torch/transformers
    if name in ("finetune", "FinetuneReport"):
        from edgebert.finetune import api

        return getattr(api, name)
    raise AttributeError(name)
