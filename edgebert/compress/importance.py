"""Importance of attention heads and FFN neurons, measured on calibration text by gradients of unit gates.

Every prunable unit u (a head, or one FFN neuron) gets a gate xi_u = 1 multiplied into its output: a head's
slice of the attention context (before the output projection, which is what `head_mask` does in Michel et al.
2019, "Are Sixteen Heads Really Better than One?"), a neuron's post-activation value. One gate per unit *per
sequence*, so the per-sequence gradient is available in one backward pass. The importance of u is

    I_u = mean over calibration sequences x of |dL(x)/dxi_u|

which is Michel et al.'s head score; for a neuron, dL/dxi_u = sum over tokens of activation * gradient, the
first-order Taylor criterion (Molchanov et al. 2017). In both cases |dL/dxi_u| is the first-order change of L
when the unit is removed (xi_u: 1 -> 0).

The loss L:

* ``mlm`` -- the masked-LM loss (summed over masked tokens, 15 % of the non-special tokens, fixed seed) when
  the model directory carries its own masked-LM head (e.g. an `edgebert distill` student). This is Michel et al.

* ``output-sensitivity`` -- for plain encoders such as sentence-transformers models, which have no loss of their
  own. Any loss that the unpruned model minimises (e.g. ||h(x; xi) - h(x; 1)||^2) has zero gradient at xi = 1,
  and the sum of squared hidden states scores a unit only by its contribution along h itself (a head that
  rotates h scores 0). We use a random projection instead: L = sum over real tokens t of r_t . h_t(x; xi) with
  r_t ~ N(0, I) drawn afresh per token (fixed seed), h the last hidden states (what every export returns and
  what the sentence embedding pools). Then dL/dxi_u = r . J_u, where J_u = dh/dxi_u is the first-order change
  of the model's output when u is removed, and E|r . J_u| = sqrt(2/pi) * ||J_u||: the score estimates (up to a
  constant) how far removing u would move the output, the quantity pruning must keep small, with no labels, no
  fitted head and non-zero gradients at the unpruned point. A unit whose output is identically zero scores
  exactly 0 under both losses.

Head scores are additionally L2-normalised within each layer before a global ranking (Michel et al. sec. 4.2 found
this makes global pruning much better); FFN neurons are ranked within their layer only (see prune.py).
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from edgebert.compress.prune import layer_normalized
from edgebert.config import IMPORTANCE_METHODS, MASKED_SHARE, SEQ_LEN
from edgebert.errors import UserError
from edgebert.families import Family

MLM = "mlm"
OUTPUT_SENSITIVITY = "output-sensitivity"
METHODS = IMPORTANCE_METHODS  # "auto", MLM, OUTPUT_SENSITIVITY
MLM_PROBABILITY = MASKED_SHARE


@dataclass
class Importance:
    """Scores per layer: heads[l] has one score per *current* head, ffn[l] one per current FFN neuron."""

    heads: list[torch.Tensor]
    ffn: list[torch.Tensor]
    method: str
    sequences: int
    tokens: int
    details: dict[str, Any] = field(default_factory=dict)

    def normalized_heads(self) -> list[torch.Tensor]:
        """Each layer's head scores divided by their L2 norm (Michel et al.), for global ranking."""
        return layer_normalized(self.heads)

    def as_dict(self, decimals: int = 6) -> dict[str, Any]:
        return {
            "method": self.method,
            "sequences": self.sequences,
            "tokens": self.tokens,
            "heads": [[round(float(v), decimals) for v in h] for h in self.heads],
            **self.details,
        }


def read_calibration(path: str | Path, max_passages: int | None = None) -> list[str]:
    """Passages (one per non-blank line) of a text file, .gz fine; UserError when missing or empty."""
    from edgebert import validate

    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"--calibration {path} is not a file; pass a text file with one passage per line (.gz ok)")
    validate.text_file("--calibration", path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            texts = []
            for line in fh:
                if line.strip():
                    texts.append(line.strip())
                    if max_passages and len(texts) >= max_passages:
                        break
    except UnicodeDecodeError as exc:
        raise validate.not_utf8("--calibration", path, exc) from exc
    except (OSError, EOFError) as exc:
        raise UserError(f"cannot read --calibration {path} ({type(exc).__name__}: {exc})") from exc
    if not texts:
        raise UserError(f"--calibration {path} has no text; pass a file with one passage per line")
    return texts


class _Gates:
    """Forward pre-hooks that multiply each unit's output by a per-sequence gate of ones that records gradients.

    The gates sit on the *inputs* of the attention-output and FFN-output (down) projections: the concatenated
    per-head context and the post-activation FFN hidden. Every family computes both inside its layer, but only
    these two Linear modules see them as a tensor (ALBERT's attention returns its layer-normed output and applies
    the FFN activation as a function, so hooks on module outputs would miss them). Where no Linear reads the context
    (XLNet's einsum projections), the attention module's `Family.head_context_method` is shadowed, for the pass, by
    one that gates the context it receives.

    A layer module run by several passes (published ALBERT shares one layer) gets ONE gate per sequence, multiplied
    into every pass: its gradient is the sum over passes, the first-order change when the unit leaves the shared
    layer (and so every pass). The gates are cleared after each batch (`_accumulate`).
    """

    def __init__(self, layers: Sequence[torch.nn.Module], family: Family) -> None:
        self.family = family
        self.head_gates: list[torch.Tensor | None] = [None] * len(layers)
        self.ffn_gates: list[torch.Tensor | None] = [None] * len(layers)
        self.handles = []
        self.wrapped: list[torch.nn.Module] = []
        for i, layer in enumerate(layers):
            attn = family.module(layer, "attention")
            if family.head_context_method:  # no Linear reads the context (XLNet): gate the method that does
                self._wrap_context(i, attn, family.head_context_method)
            else:
                self.handles.append(family.module(layer, "attention_output").register_forward_pre_hook(self._head_hook(i, attn)))
            self.handles.append(family.module(layer, "ffn_output").register_forward_pre_hook(self._ffn_hook(i)))

    def _head_gate(self, i: int, batch: int, heads: int, dtype: torch.dtype) -> torch.Tensor:
        """Layer i's [batch, heads] gate of this batch (made on its first pass; later passes reuse it)."""
        if self.head_gates[i] is None:
            self.head_gates[i] = torch.ones(batch, heads, dtype=dtype, requires_grad=True)
        return self.head_gates[i]

    def _head_hook(self, i: int, attn: torch.nn.Module) -> Any:
        def hook(_module: Any, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
            context = inputs[0]  # [batch, length, heads x head size]
            heads = self.family.heads(attn)
            gate = self._head_gate(i, context.shape[0], heads, context.dtype)
            width = context.shape[-1] // heads
            return (context * gate.repeat_interleave(width, dim=1)[:, None, :], *inputs[1:])

        return hook

    def _wrap_context(self, i: int, attn: torch.nn.Module, name: str) -> None:
        """Shadow `attn.<name>(h, context, ...)` with one that gates its context [length, batch, heads, head size]."""
        original = getattr(attn, name)

        def gated(h: torch.Tensor, context: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            gate = self._head_gate(i, context.shape[1], context.shape[2], context.dtype)
            return original(h, context * gate[None, :, :, None], *args, **kwargs)

        setattr(attn, name, gated)
        self.wrapped.append(attn)

    def _ffn_hook(self, i: int) -> Any:
        def hook(_module: Any, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
            hidden = inputs[0]
            gate = self.ffn_gates[i]
            if gate is None:
                gate = torch.ones(hidden.shape[0], hidden.shape[-1], dtype=hidden.dtype, requires_grad=True)
                self.ffn_gates[i] = gate
            return (hidden * gate[:, None, :], *inputs[1:])

        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        for attn in self.wrapped:  # the class's method shows again
            delattr(attn, self.family.head_context_method)


def _mask_tokens(input_ids: torch.Tensor, special: torch.Tensor, mask_id: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """15 % of the non-special tokens replaced by [MASK] (at least one per sequence); labels -100 elsewhere."""
    probs = torch.full(input_ids.shape, MLM_PROBABILITY)
    probs[special] = 0.0
    chosen = torch.bernoulli(probs, generator=generator).bool()
    for row in range(input_ids.shape[0]):  # a sequence with no masked token would contribute nothing
        candidates = (~special[row]).nonzero().flatten()
        if not chosen[row].any() and len(candidates):
            chosen[row, candidates[torch.randint(len(candidates), (1,), generator=generator)]] = True
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    masked = torch.where(chosen, torch.full_like(input_ids, mask_id), input_ids)
    return masked, labels


def _resolve_method(method: str, mlm_head: torch.nn.Module | None, tokenizer: Any, texts: Sequence[str]) -> str:
    """The concrete loss for `method` ('auto' resolved), refusing a method the model or texts cannot support."""
    if method not in METHODS:
        raise UserError(f"unknown importance method '{method}'; choose one of: {', '.join(METHODS)}")
    if method == "auto":
        method = MLM if mlm_head is not None else OUTPUT_SENSITIVITY
    if method == MLM and mlm_head is None:
        raise UserError("importance method 'mlm' needs a model with its own masked-LM head; use 'output-sensitivity'")
    if method == MLM and tokenizer.mask_token_id is None:
        raise UserError("importance method 'mlm' needs a tokenizer with a [MASK] token; use 'output-sensitivity'")
    if not texts:
        raise UserError("no calibration text to measure importance on")
    return method


def _freeze(base_model: torch.nn.Module, mlm_head: torch.nn.Module | None) -> dict[torch.nn.Parameter, bool]:
    """Eval mode and no gradients for the model (and head); returns each parameter's former requires_grad."""
    base_model.eval()
    if mlm_head is not None:
        mlm_head.eval()
    requires = {p: p.requires_grad for p in base_model.parameters()}
    if mlm_head is not None:
        requires.update({p: p.requires_grad for p in mlm_head.parameters()})
    for p in requires:
        p.requires_grad_(False)
    return requires


def _batch_loss(
    base_model: torch.nn.Module,
    mlm_head: torch.nn.Module | None,
    family: Family,
    tokenizer: Any,
    texts: list[str],
    method: str,
    seq_len: int,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, input ids, attention mask) of one calibration batch under `method` (see the module docstring)."""
    batch = tokenizer(texts, truncation=True, max_length=seq_len, padding=True, return_tensors="pt", return_special_tokens_mask=True)
    mask = batch["attention_mask"]
    special = batch["special_tokens_mask"].bool() | (mask == 0)
    input_ids = batch["input_ids"]
    labels = None
    if method == MLM:
        input_ids, labels = _mask_tokens(input_ids, special, tokenizer.mask_token_id, generator)
    kwargs = {"input_ids": input_ids, "attention_mask": mask}
    if family.uses_token_type_ids:
        kwargs["token_type_ids"] = batch.get("token_type_ids", torch.zeros_like(input_ids))
    hidden = base_model(**kwargs).last_hidden_state
    if method == MLM:
        selected = labels != -100
        logits = mlm_head(hidden[selected])
        loss = torch.nn.functional.cross_entropy(logits.float(), labels[selected], reduction="sum")
    else:
        r = torch.randn(hidden.shape, generator=generator, dtype=hidden.dtype)
        loss = (hidden * r * mask[:, :, None].to(hidden.dtype)).sum()
    return loss, input_ids, mask


def _accumulate(loss: torch.Tensor, gates: _Gates, head_scores: list[torch.Tensor], ffn_scores: list[torch.Tensor | None]) -> None:
    """Add one batch's |dL/dgate| per head and per FFN neuron to the running sums, then clear the gates."""
    n = len(head_scores)
    used = [g for g in gates.head_gates + gates.ffn_gates if g is not None]
    grads = torch.autograd.grad(loss, used, allow_unused=True)
    by_gate = {id(g): gr for g, gr in zip(used, grads)}
    for i in range(n):
        hg, fg = by_gate.get(id(gates.head_gates[i])), by_gate.get(id(gates.ffn_gates[i]))
        if hg is not None:
            head_scores[i] += hg.abs().sum(dim=0).double()
        if fg is not None:
            contribution = fg.abs().sum(dim=0).double()
            ffn_scores[i] = contribution if ffn_scores[i] is None else ffn_scores[i] + contribution
    gates.head_gates = [None] * n
    gates.ffn_gates = [None] * n


def compute_importance(
    base_model: torch.nn.Module,
    family: Family,
    tokenizer: Any,
    texts: Sequence[str],
    mlm_head: torch.nn.Module | None = None,
    method: str = "auto",
    seq_len: int = SEQ_LEN,
    batch_size: int = 16,
    seed: int = 0,
    quiet: bool = True,
) -> Importance:
    """Score every head and FFN neuron of `base_model` on `texts` (see the module docstring for the criterion).

    `method` 'auto' picks 'mlm' when `mlm_head` is given (the model's own masked-LM head), else
    'output-sensitivity'. The model's parameters are not changed and get no gradients. Progress shows unless `quiet`.
    """
    from edgebert.progress import Track

    method = _resolve_method(method, mlm_head, tokenizer, texts)
    layers = family.layers(base_model)
    was_training = base_model.training
    requires = _freeze(base_model, mlm_head)

    head_scores = [torch.zeros(family.heads(family.module(l, "attention")), dtype=torch.float64) for l in layers]
    ffn_scores: list[torch.Tensor | None] = [None] * len(layers)
    generator = torch.Generator().manual_seed(seed)
    gates = _Gates(layers, family)
    sequences = tokens = 0
    try:
        with torch.enable_grad(), Track("importance", len(texts), "passages", quiet=quiet) as track:
            for start in range(0, len(texts), batch_size):
                batch_texts = list(texts[start : start + batch_size])
                loss, input_ids, mask = _batch_loss(base_model, mlm_head, family, tokenizer, batch_texts, method, seq_len, generator)
                _accumulate(loss, gates, head_scores, ffn_scores)
                sequences += int(input_ids.shape[0])
                tokens += int(mask.sum())
                track.advance(len(batch_texts))
    finally:
        gates.remove()
        for p, flag in requires.items():
            p.requires_grad_(flag)
        base_model.train(was_training)
    ffn = [
        (s if s is not None else torch.zeros(int(family.module(l, "ffn_output").in_features), dtype=torch.float64)) / sequences
        for s, l in zip(ffn_scores, layers)
    ]
    return Importance(
        heads=[h / sequences for h in head_scores],
        ffn=ffn,
        method=method,
        sequences=sequences,
        tokens=tokens,
        details={"seq_len": seq_len, "seed": seed},
    )
