"""Corpora (files, .gz, directories, dataset names), tokenising, dynamic masking, the STS csv loader."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from edgebert.data import corpus_fingerprint, load_corpus, load_sts_csv, mlm_collator, tokenize_corpus
from edgebert.errors import UserError


@pytest.fixture()
def tokenizer(tiny_bert: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert)


def test_corpus_from_text_gz_and_directory(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("the dog plays\n\n  \nthe cat\n")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as fh:
        fh.write("hello world\n")
    assert load_corpus(tmp_path / "a.txt") == ["the dog plays", "the cat"]
    assert load_corpus(str(tmp_path / "b.txt.gz")) == ["hello world"]
    assert load_corpus(tmp_path) == ["the dog plays", "the cat", "hello world"]
    assert load_corpus([tmp_path / "a.txt", tmp_path / "b.txt.gz"])[-1] == "hello world"
    assert corpus_fingerprint(tmp_path / "a.txt") != corpus_fingerprint(tmp_path / "b.txt.gz")


def test_missing_and_empty_corpus_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_corpus(tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_text("\n  \n")
    with pytest.raises(UserError, match="empty"):
        load_corpus(tmp_path / "empty.txt")
    (tmp_path / "d").mkdir()
    with pytest.raises(UserError, match="no text files"):
        load_corpus(tmp_path / "d")


def test_dataset_name_fails_offline_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="could not load dataset 'edgebert-no-such/corpus'"):
        load_corpus("edgebert-no-such/corpus")


def test_truncate_and_pack(tokenizer) -> None:
    texts = ["the quick brown fox jumps over the lazy dog " * 3, "hello world"]
    trunc = tokenize_corpus(texts, tokenizer, seq_len=12, packing="truncate")
    assert len(trunc) == 2 and len(trunc[0]["input_ids"]) == 12 and len(trunc[1]["input_ids"]) < 12
    assert trunc[0]["input_ids"][0] == tokenizer.cls_token_id and trunc[0]["input_ids"][-1] == tokenizer.sep_token_id
    packed = tokenize_corpus(texts, tokenizer, seq_len=12, packing="pack")
    assert all(len(s["input_ids"]) <= 12 for s in packed) and len(packed[0]["input_ids"]) == 12
    assert packed.num_tokens >= trunc.num_tokens - 2
    with pytest.raises(UserError):
        tokenize_corpus(texts, tokenizer, seq_len=12, packing="zip")


def test_sequences_follow_the_tokenizers_own_template(tmp_path: Path) -> None:
    """XLNet puts `<sep> <cls>` after the text, <cls> in segment 2: the corpus sequences are what its tokenizer makes of
    one text (types included), not BERT's [CLS] ... [SEP]."""
    import model_zoo

    tokenizer = model_zoo.xlnet_tokenizer(tmp_path / "xlnet")
    text = "the cat sat on the mat"
    corpus = tokenize_corpus([text], tokenizer, 64, "truncate")
    theirs = tokenizer(text, return_token_type_ids=True)
    assert corpus[0]["input_ids"] == theirs["input_ids"] and corpus[0]["token_type_ids"] == theirs["token_type_ids"]
    assert corpus[0]["special_tokens_mask"][-2:] == [1, 1] and not any(corpus[0]["special_tokens_mask"][:-2])


def test_dynamic_masking_never_masks_special_tokens(tokenizer) -> None:
    import torch

    data = tokenize_corpus(["the quick brown fox jumps over the lazy dog"] * 64, tokenizer, seq_len=32)
    collator = mlm_collator(tokenizer)
    torch.manual_seed(0)
    a = collator([data[i] for i in range(64)])
    b = collator([data[i] for i in range(64)])
    labels = a["labels"]
    assert not torch.equal(labels, b["labels"])  # fresh masks every draw
    assert (labels[:, 0] == -100).all()  # [CLS] never scored
    real = a["attention_mask"].bool()
    rate = ((labels != -100) & real).sum().item() / (real.sum().item() - 2 * 64)
    assert 0.08 < rate < 0.25
    masked = labels != -100
    share_mask = (a["input_ids"][masked] == tokenizer.mask_token_id).float().mean().item()
    assert 0.6 < share_mask < 0.95


def test_sts_csv(tmp_path: Path) -> None:
    path = tmp_path / "sts.csv"
    path.write_text('a man plays,"a man, playing",4.5\nthe cat,the dog,1\n')
    pairs = load_sts_csv(path)
    assert pairs.sentences2[0] == "a man, playing" and pairs.scores == [4.5, 1.0] and len(pairs) == 2
    with pytest.raises(UserError):
        load_sts_csv(tmp_path / "missing.csv")
    (tmp_path / "bad.csv").write_text("a,b,1\nc,d,high\n")
    with pytest.raises(UserError, match="not a number"):
        load_sts_csv(tmp_path / "bad.csv")


def test_real_sts_dev(shared_data: Path) -> None:
    pairs = load_sts_csv(shared_data / "stsb" / "dev.csv")
    assert len(pairs) == 1500 and 0 <= min(pairs.scores) and max(pairs.scores) <= 5


@pytest.mark.parametrize("score", ["500", "-42", "nan", "inf", "-inf", "5.01"])
def test_sts_scores_must_be_finite_and_on_the_0_to_5_scale(tmp_path: Path, score: str) -> None:
    path = tmp_path / "sts.csv"
    path.write_text(f"a dog,a cat,3.5\nthe man,a man,{score}\nx,y,1\n")
    with pytest.raises(UserError, match=f"{path}:2: score .* outside the STS-B scale 0..5"):
        load_sts_csv(path)


def test_sts_scale_bounds_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "sts.csv"
    path.write_text("sentence1,sentence2,score\na,b,0\nc,d,5\n")
    assert load_sts_csv(path).scores == [0.0, 5.0]


@pytest.mark.parametrize("body", [b"a dog,a cat,3.5\n\xff\xfe\xfd,x,1\n", b"a,b,1\nc\x00d,e,2\n"])
def test_sts_file_not_utf8_text_names_the_file(tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "sts.csv"
    path.write_bytes(body)
    with pytest.raises(UserError, match=f"STS file {path}"):
        load_sts_csv(path)


@pytest.mark.parametrize("name", ["garbage.txt", "garbage.txt.gz", "dir"])
def test_binary_corpus_is_refused_naming_the_file(tmp_path: Path, name: str) -> None:
    garbage = bytes(range(256)) * 64
    if name == "dir":
        (tmp_path / "dir").mkdir()
        (tmp_path / "dir" / "ok.txt").write_text("fine text\n")
        (tmp_path / "dir" / "bad.txt").write_bytes(garbage)
        bad = tmp_path / "dir" / "bad.txt"
    elif name.endswith(".gz"):
        bad = tmp_path / name
        with gzip.open(bad, "wb") as fh:
            fh.write(garbage)
    else:
        bad = tmp_path / name
        bad.write_bytes(garbage)
    with pytest.raises(UserError, match=f"corpus file {bad} is (not UTF-8 text|binary)"):
        load_corpus(tmp_path / name)


def test_dataset_name_fails_fast_when_the_hub_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://edgebert-unreachable.invalid")
    started = time.perf_counter()
    with pytest.raises(UserError, match="offline or unreachable"):
        load_corpus("edgebert-no-such/corpus")
    assert time.perf_counter() - started < 10


@pytest.mark.parametrize(
    ("passage", "sentences"),
    [
        ("The dog ran home. It was late! Was it raining? Yes, it was raining hard.",
         ["The dog ran home. It was late!", "Was it raining? Yes, it was raining hard."]),  # short pieces join the next
        ("Mr. Smith met Gen. Lee in the U.S. Senate today. Then J. Adams spoke for an hour.",
         ["Mr. Smith met Gen. Lee in the U.S. Senate today.", "Then J. Adams spoke for an hour."]),
        ('He said "we will win." The crowd cheered for a long time.', ['He said "we will win."', "The crowd cheered for a long time."]),
        ("Revenue rose 3.5 percent in 1812. 2000 soldiers came home that winter.", ["Revenue rose 3.5 percent in 1812.", "2000 soldiers came home that winter."]),
        ("A passage without an end mark", ["A passage without an end mark"]),
        ("We met at 5 p.m. on the hill and talked.", ["We met at 5 p.m. on the hill and talked."]),
        ("The long first sentence is here. Short end.", ["The long first sentence is here. Short end."]),
    ],
)  # fmt: skip
def test_split_sentences(passage: str, sentences: list[str]) -> None:
    from edgebert.data import split_sentences

    assert split_sentences(passage) == sentences


def test_corpus_sentences_split_text_passages_but_not_table_sentences(tmp_path: Path) -> None:
    text = tmp_path / "c.txt"
    text.write_text("The first passage has one sentence. And here is its second sentence.\nA second passage stays whole.\n")
    sts = tmp_path / "sts.csv"
    sts.write_text("The cat sat. On the mat it sat,A cat is sitting down.,4.0\n")
    assert load_corpus([text, sts], sentences=True) == [
        "The first passage has one sentence.", "And here is its second sentence.", "A second passage stays whole.",
        "The cat sat. On the mat it sat", "A cat is sitting down.",
    ]  # fmt: skip
    assert len(load_corpus([text, sts])) == 4
