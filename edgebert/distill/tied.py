"""Tied weights in a state dict: which names are second names of a tensor stored once (kept out of checkpoints,
since safetensors refuses shared storage)."""

from __future__ import annotations

import torch


def tied_duplicate_keys(state: dict[str, torch.Tensor]) -> list[str]:
    """Keys whose tensor shares storage with an earlier key (the second name of a tied weight)."""
    seen: set[tuple[int, int]] = set()
    duplicates = []
    for key, tensor in state.items():
        ident = (tensor.untyped_storage().data_ptr(), tensor.storage_offset())
        if ident in seen:
            duplicates.append(key)
        seen.add(ident)
    return duplicates
