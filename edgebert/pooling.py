"""Sentence pooling and the `SentenceEmbedder` module that every exporter traces."""

from __future__ import annotations

import torch
from torch import nn

from edgebert.heads import SentenceStack, default_stack, torch_dense_layers, torch_pool, torch_sentence_vector
from edgebert.modeldir import POOLING_MODES as POOLINGS
from edgebert.task_heads import output_names


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, mode: str) -> torch.Tensor:
    """Pool token states [B, T, H] into sentence vectors [B, H] over the unmasked tokens (`edgebert.heads`)."""
    if mode not in POOLINGS:
        raise ValueError(f"unknown pooling '{mode}'; expected one of {POOLINGS}")
    return torch_pool(hidden, attention_mask, mode)


class SentenceEmbedder(nn.Module):
    """Encoder + the model's sentence stack (pooling, Dense, Normalize): returns (sentence_embedding, last_hidden_state).

    `pooling` is the model's `SentenceStack` (`edgebert.modeldir.resolve_stack`) or one pooling mode, which means
    that mode followed by L2 normalisation."""

    def __init__(self, encoder: nn.Module, pooling: SentenceStack | str = "mean", uses_token_type_ids: bool = True) -> None:
        super().__init__()
        if isinstance(pooling, str):
            if pooling not in POOLINGS:
                raise ValueError(f"unknown pooling '{pooling}'; expected one of {POOLINGS}")
            pooling = default_stack(pooling)
        self.encoder = encoder
        self.stack = pooling
        self.pooling = "+".join(pooling.pooling)
        self.dense = torch_dense_layers(pooling)  # ops inline in forward: traced graphs scope them to the embedder
        self.uses_token_type_ids = uses_token_type_ids
        self.output_names = ("sentence_embedding", "last_hidden_state")

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
        return torch_sentence_vector(self.stack, self.dense, hidden, attention_mask), hidden


class TaskModel(nn.Module):
    """A transformers task model (`edgebert.task_heads`) with the export's inputs and the task's outputs: a tuple
    in `output_names` order (`logits`, or fill-mask's in-graph top-k `top_ids` int32 and `top_scores`).

    The transformers model is the attribute `model`; its base model is `encoder`."""

    def __init__(self, model: nn.Module, task: str, top_k: int, uses_token_type_ids: bool) -> None:
        super().__init__()
        self.model = model
        self.task = task
        self.top_k = top_k
        self.uses_token_type_ids = uses_token_type_ids
        self.output_names = output_names(task)

    @property
    def encoder(self) -> nn.Module:
        """The base model (what a feature-extraction export of the same dir runs)."""
        return self.model.base_model

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.uses_token_type_ids:
            kwargs["token_type_ids"] = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        logits = self.model(**kwargs).logits
        if self.output_names == ("logits",):
            return (logits,)
        scores, ids = torch.topk(torch.softmax(logits, dim=-1), self.top_k, dim=-1)
        return ids.to(torch.int32), scores
