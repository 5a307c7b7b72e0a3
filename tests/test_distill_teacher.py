"""A head-less teacher gets an MLM head tied to its word embeddings, fitted with the body frozen, cached."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from edgebert.data import mlm_collator, tokenize_corpus
from edgebert.distill.teacher import HeadFitConfig, fit_mlm_head, load_teacher_mlm, prepare_teacher
from edgebert.families import BERT


@pytest.fixture()
def corpus_and_collator(tiny_bert: Path):
    from transformers import AutoTokenizer

    from conftest import WORDS

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    # a very regular corpus: a head can learn its unigram statistics quickly
    texts = [" ".join(WORDS[(i * 7 + j) % 12] for j in range(12)) for i in range(120)]
    return tokenize_corpus(texts, tok, seq_len=24), mlm_collator(tok)


def test_head_fitting_lowers_mlm_loss_and_keeps_body_frozen(tiny_bert: Path, corpus_and_collator) -> None:
    data, collator = corpus_and_collator
    model, own = load_teacher_mlm(tiny_bert, BERT)
    assert own is False
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    body = {k: v.clone() for k, v in model.bert.state_dict().items()}
    info = fit_mlm_head(model, BERT, data, [data[i] for i in range(100, 120)], collator, HeadFitConfig(steps=60, batch_size=16, lr=1e-2))
    assert info["after"]["loss"] < info["before"]["loss"] - 0.3
    assert info["after"]["accuracy"] >= info["before"]["accuracy"]
    for k, v in model.bert.state_dict().items():
        assert torch.equal(v, body[k]), k  # tied decoder = word embeddings: unchanged too
    assert not any(p.requires_grad for p in model.parameters())


def test_fitted_head_is_cached_and_reused(tiny_bert: Path, corpus_and_collator, tmp_path: Path) -> None:
    data, collator = corpus_and_collator
    cfg = HeadFitConfig(steps=5, batch_size=8, lr=1e-2)
    first, info1 = prepare_teacher(tiny_bert, BERT, data, collator, "fp", 24, "truncate", cfg, cache_dir=tmp_path)
    second, info2 = prepare_teacher(tiny_bert, BERT, data, collator, "fp", 24, "truncate", cfg, cache_dir=tmp_path)
    assert info1["cache_hit"] is False and info2["cache_hit"] is True
    assert info2["mlm_accuracy"] == info1["mlm_accuracy"]
    assert torch.equal(first.cls.predictions.transform.dense.weight, second.cls.predictions.transform.dense.weight)
    assert torch.equal(first.cls.predictions.bias, second.cls.predictions.bias)
    _, info3 = prepare_teacher(tiny_bert, BERT, data, collator, "other-corpus", 24, "truncate", cfg, cache_dir=tmp_path)
    assert info3["cache_hit"] is False


def test_teacher_with_its_own_head_uses_it(tmp_path: Path, tiny_bert: Path, corpus_and_collator) -> None:
    from transformers import BertForMaskedLM

    data, collator = corpus_and_collator
    mlm = BertForMaskedLM.from_pretrained(tiny_bert)
    torch.nn.init.normal_(mlm.cls.predictions.transform.dense.weight)
    mlm.save_pretrained(tmp_path / "mlm")
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (tiny_bert / f).exists():
            (tmp_path / "mlm" / f).write_bytes((tiny_bert / f).read_bytes())
    model, info = prepare_teacher(tmp_path / "mlm", BERT, data, collator, "fp", 24, "truncate", HeadFitConfig(steps=1), cache_dir=tmp_path / "c")
    assert info["source"] == "own" and not (tmp_path / "c").exists()
    assert torch.equal(model.cls.predictions.transform.dense.weight, mlm.cls.predictions.transform.dense.weight)


@pytest.mark.parametrize(("xdg", "edgebert_cache"), [("", None), ("relative/cache", None), ("   ", ""), (None, "rel")])
def test_cache_dir_is_never_relative(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, xdg: str | None, edgebert_cache: str | None) -> None:
    from edgebert.distill.teacher import default_cache_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name, value in (("XDG_CACHE_HOME", xdg), ("EDGEBERT_CACHE", edgebert_cache)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    path = default_cache_dir()
    assert path.is_absolute()
    if edgebert_cache:
        assert path == tmp_path / edgebert_cache / "mlm-heads"
    else:
        assert path == tmp_path / "home" / ".cache" / "edgebert" / "mlm-heads"


def test_absolute_xdg_cache_home_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from edgebert.distill.teacher import default_cache_dir

    monkeypatch.delenv("EDGEBERT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "edgebert" / "mlm-heads"
