"""Head and FFN-neuron importance (edgebert/compress/importance.py) on the tiny BERT: shapes, signs, seeds, no side
effects on the model, and the calibration reader."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import WORDS

from edgebert.compress.importance import (
    MLM,
    OUTPUT_SENSITIVITY,
    Importance,
    compute_importance,
    read_calibration,
)
from edgebert.errors import UserError
from edgebert.families import BERT

TEXTS = [" ".join(WORDS[i : i + 3 + i % 7]) for i in range(0, 60, 5)]  # 12 sentences of different lengths


@pytest.fixture(scope="module")
def mlm(tiny_bert: Path) -> tuple[Any, Any]:
    """(BertForMaskedLM on the tiny BERT's weights, its tokenizer); the head is random but real."""
    from transformers import AutoTokenizer, BertForMaskedLM

    torch.manual_seed(0)
    model = BertForMaskedLM.from_pretrained(tiny_bert, attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(tiny_bert)


def _score(mlm: tuple[Any, Any], method: str = OUTPUT_SENSITIVITY, seed: int = 0) -> Importance:
    model, tokenizer = mlm
    head = model.cls if method == MLM else None
    return compute_importance(model.bert, BERT, tokenizer, TEXTS, mlm_head=head, method=method, seq_len=24, batch_size=5, seed=seed)


@pytest.mark.parametrize("method", [OUTPUT_SENSITIVITY, MLM])
def test_shapes_and_signs(mlm: tuple[Any, Any], method: str) -> None:
    scores = _score(mlm, method)
    config = mlm[0].config
    assert scores.method == method and scores.sequences == len(TEXTS)
    assert 0 < scores.tokens <= len(TEXTS) * 24
    assert len(scores.heads) == len(scores.ffn) == config.num_hidden_layers
    for heads, ffn in zip(scores.heads, scores.ffn):
        assert heads.shape == (config.num_attention_heads,) and ffn.shape == (config.intermediate_size,)
        assert (heads >= 0).all() and (ffn >= 0).all() and heads.sum() > 0 and ffn.sum() > 0
        assert torch.isfinite(heads).all() and torch.isfinite(ffn).all()
    for normalized in scores.normalized_heads():
        assert torch.isclose(normalized.norm(), torch.tensor(1.0, dtype=normalized.dtype))
    assert len(scores.as_dict()["heads"]) == config.num_hidden_layers


def test_auto_picks_mlm_only_with_a_head(mlm: tuple[Any, Any]) -> None:
    model, tokenizer = mlm
    assert compute_importance(model.bert, BERT, tokenizer, TEXTS[:2], seq_len=16).method == OUTPUT_SENSITIVITY
    assert compute_importance(model.bert, BERT, tokenizer, TEXTS[:2], mlm_head=model.cls, seq_len=16).method == MLM


@pytest.mark.parametrize("method", [OUTPUT_SENSITIVITY, MLM])
def test_same_seed_same_scores_other_seed_other_scores(mlm: tuple[Any, Any], method: str) -> None:
    a, b, c = _score(mlm, method, seed=1), _score(mlm, method, seed=1), _score(mlm, method, seed=2)
    assert all(torch.equal(x, y) for x, y in zip(a.heads + a.ffn, b.heads + b.ffn))
    assert not all(torch.equal(x, y) for x, y in zip(a.heads + a.ffn, c.heads + c.ffn))


def test_the_model_is_left_as_it_was(mlm: tuple[Any, Any]) -> None:
    model, _ = mlm
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    model.train()
    _score(mlm, MLM)
    assert model.training
    model.eval()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert {n: p.requires_grad for n, p in model.named_parameters()} == flags
    assert all(p.grad is None for p in model.parameters())
    assert not model.bert.encoder.layer[0].attention.output.dense._forward_pre_hooks  # the gates are removed


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"method": "random"}, "unknown importance method 'random'"),
        ({"method": MLM}, "needs a model with its own masked-LM head"),
        ({"texts": []}, "no calibration text"),
    ],
)
def test_bad_arguments_are_user_errors(mlm: tuple[Any, Any], kwargs: dict[str, Any], fragment: str) -> None:
    model, tokenizer = mlm
    args = {"texts": TEXTS, **kwargs}
    with pytest.raises(UserError, match=fragment):
        compute_importance(model.bert, BERT, tokenizer, **args)


def test_read_calibration(tmp_path: Path) -> None:
    plain = tmp_path / "calib.txt"
    plain.write_text("first passage\n\n  second passage  \nthird\n")
    packed = tmp_path / "calib.txt.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_calibration(plain) == read_calibration(packed) == ["first passage", "second passage", "third"]
    assert read_calibration(plain, max_passages=2) == ["first passage", "second passage"]
    (tmp_path / "blank.txt").write_text("\n \n")
    with pytest.raises(UserError, match="has no text"):
        read_calibration(tmp_path / "blank.txt")
    with pytest.raises(UserError, match="is not a file"):
        read_calibration(tmp_path / "missing.txt")
