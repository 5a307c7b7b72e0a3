"""Which Linears litert-torch's converter stores with a norm's weight folded in (W diag(gamma)), found on the model.

The converter folds the multiply by a LayerNorm's weight into a FULLY_CONNECTED that reads the norm's output (the
query / key / value projections after a layer's output norm, the FFN up-projection after the attention norm), but not
every such Linear (ALBERT's embedding projection after the embedding norm keeps its weight: its FULLY_CONNECTED has
no bias operand). So the fact is measured, not assumed: the model is converted once at a short length with every
candidate norm's weight made distinct from 1, and each candidate Linear's stored weight is compared with W and with
W diag(gamma). Used by the `tflite-w4a8` weight grid (edgebert/weight_grids.py), which must round what is stored.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

PROBE_TOKENS = 8  # the conversion's length: folding does not depend on it


def norm_fed_linears(model: nn.Module) -> dict[nn.Module, nn.Module]:
    """{Linear: norm} for each Linear of `model` whose input is a norm's output as it is (dropout aside: one forward
    pass in eval mode): the candidates for folding. A norm is a module whose class name has "Norm" and that owns a 1-D
    weight."""
    norms = [m for m in model.modules() if "Norm" in type(m).__name__ and isinstance(getattr(m, "weight", None), torch.Tensor) and m.weight.dim() == 1]
    produced: dict[tuple[int, tuple[int, ...], tuple[int, ...]], tuple[nn.Module, torch.Tensor]] = {}  # kept alive
    found: dict[nn.Module, nn.Module] = {}

    def key(t: torch.Tensor) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        return t.data_ptr(), tuple(t.shape), t.stride()

    def after_norm(m: nn.Module, _: tuple, out: torch.Tensor) -> None:
        produced[key(out)] = (m, out)

    def before_linear(m: nn.Module, args: tuple) -> None:
        if args and isinstance(args[0], torch.Tensor) and key(args[0]) in produced:
            found[m] = produced[key(args[0])][0]

    hooks = [n.register_forward_hook(after_norm) for n in norms]
    hooks += [m.register_forward_pre_hook(before_linear) for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.no_grad():
            model(**_probe_inputs())
    finally:
        for h in hooks:
            h.remove()
    return found


def folded_norms(model: nn.Module) -> dict[nn.Module, nn.Module]:
    """{Linear of `model`: norm} for each candidate (`norm_fed_linears`) that the converter stores as W diag(gamma)."""
    probe = copy.deepcopy(model).eval()
    candidates = norm_fed_linears(probe)
    if not candidates:
        return {}
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for norm in set(candidates.values()):  # gamma = 1 would make W and W diag(gamma) the same tensor
            norm.weight.mul_(1.5 + torch.rand(norm.weight.shape, generator=generator))
    stored = _stored_matrices(probe)
    originals = dict(zip(probe.modules(), model.modules()))
    found = {}
    for linear, norm in candidates.items():
        w = linear.weight.detach().float().numpy()
        folded = w * norm.weight.detach().float().numpy()
        if any(s.shape == w.shape and np.allclose(s, folded, rtol=1e-5, atol=1e-8) for s in stored):
            found[originals[linear]] = originals[norm]
    return found


def _probe_inputs() -> dict[str, torch.Tensor]:
    return {"input_ids": torch.arange(1, PROBE_TOKENS + 1).unsqueeze(0), "attention_mask": torch.ones(1, PROBE_TOKENS, dtype=torch.long)}


class _FirstOutput(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids.long(), attention_mask=attention_mask.long())
        return out[0] if isinstance(out, (tuple, list)) else next(iter(out.values()))


def _stored_matrices(model: nn.Module) -> list[np.ndarray]:
    """The 2-D float32 constants of `model` converted by litert-torch (its first output)."""
    from edgebert.targets.tflite.runner import _set_env

    _set_env()
    import litert_torch
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    inputs = _probe_inputs()
    with tempfile.TemporaryDirectory(prefix="edgebert-folds-") as scratch, torch.inference_mode(False), torch.no_grad():
        path = Path(scratch) / "probe.tflite"
        sample = tuple(inputs[name].to(torch.int32) for name in ("input_ids", "attention_mask"))
        litert_torch.convert(_FirstOutput(model), sample).export(str(path))
        tree = flatbuffer_utils.read_model(str(path))
    found = []
    for subgraph in tree.subgraphs:
        for tensor in subgraph.tensors:
            data = tree.buffers[tensor.buffer].data
            if data is not None and tensor.type == schema.TensorType.FLOAT32 and len(tensor.shape) == 2:
                found.append(np.frombuffer(bytes(data), np.float32).reshape(tuple(tensor.shape)))
    return found
