"""Evaluation: STS Spearman (cosine of sentence embeddings vs gold scores)."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgebert.config import SEQ_LEN
from edgebert.data import STSPairs, iter_batches


def rankdata(values: Any) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (as scipy.stats.rankdata's default)."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Any, y: Any) -> float:
    """Spearman's rank correlation (Pearson of average ranks); nan when either side is constant."""
    rx, ry = rankdata(x), rankdata(y)
    if len(rx) != len(ry):
        raise ValueError(f"spearman: lengths differ ({len(rx)} vs {len(ry)})")
    rx -= rx.mean()
    ry -= ry.mean()
    denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    return float((rx * ry).sum() / denom) if denom > 0 else float("nan")


def embed(
    encoder: Any,
    tokenizer: Any,
    sentences: list[str],
    pooling: str = "mean",
    batch_size: int = 64,
    max_length: int = SEQ_LEN,
    uses_token_type_ids: bool = True,
) -> np.ndarray:
    """L2-normalised pooled sentence embeddings from a base encoder (BertModel-like) in eval mode."""
    import torch

    from edgebert.pooling import SentenceEmbedder

    embedder = SentenceEmbedder(encoder, pooling=pooling, uses_token_type_ids=uses_token_type_ids)
    was_training = encoder.training
    encoder.eval()
    device = next(encoder.parameters()).device
    out = []
    # Sort by length so each batch pads little; restore the order at the end.
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    try:
        with torch.inference_mode():
            for batch in iter_batches([sentences[i] for i in order], batch_size):
                enc = tokenizer(list(batch), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
                enc = {k: v.to(device) for k, v in enc.items()}
                vec, _ = embedder(enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids"))
                out.append(vec.float().cpu().numpy())
    finally:
        encoder.train(was_training)
    vectors = np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)
    result = np.empty_like(vectors)
    result[order] = vectors
    return result


def sts_spearman(
    encoder: Any,
    tokenizer: Any,
    pairs: STSPairs,
    pooling: str = "mean",
    batch_size: int = 64,
    uses_token_type_ids: bool = True,
) -> float:
    """Spearman correlation between cosine(emb(s1), emb(s2)) and the gold scores."""
    a = embed(encoder, tokenizer, pairs.sentences1, pooling, batch_size, uses_token_type_ids=uses_token_type_ids)
    b = embed(encoder, tokenizer, pairs.sentences2, pooling, batch_size, uses_token_type_ids=uses_token_type_ids)
    cosines = (a * b).sum(axis=1)
    return spearman(cosines, pairs.scores)
