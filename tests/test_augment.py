"""edgebert.distill.augment: word-replacement variants of distillation text from the teacher's own word table."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from model_zoo import build_albert, build_roberta

from edgebert.distill.augment import augment, augment_sentences, is_uncased, neighbours, whole_words, word_table

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "suites" / "augment_corpus.py"


def _tokenizer(model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model)


def test_neighbours_are_the_nearest_whole_words_by_cosine(tiny_bert: Path) -> None:
    tokenizer = _tokenizer(tiny_bert)
    table = word_table(tiny_bert)
    near = neighbours(tokenizer, table, k=3)
    vocab = tokenizer.get_vocab()
    assert "great" in near and "##a" not in near and "[CLS]" not in near and "a" not in near  # whole words only

    def cos(a: str, b: str) -> float:
        u, v = table[vocab[a]], table[vocab[b]]
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    sims = {w: cos("great", w) for w in near if w != "great"}
    assert near["great"] == sorted(sims, key=sims.get, reverse=True)[:3]
    assert all(w in near for options in near.values() for w in options)  # a word is only swapped for a whole word


@pytest.mark.parametrize("build", [build_roberta, build_albert], ids=["roberta-bpe", "albert-unigram"])
def test_whole_words_are_the_tokens_a_word_becomes_in_a_sentence(build, tmp_path: Path) -> None:
    """Byte-level BPE (`Ġgood`) and SentencePiece (`▁good`) vocabularies: a word maps to the one token it is
    tokenized to mid-sentence, never to a sentence-start or word-piece spelling."""
    model = build(tmp_path / "m")
    tokenizer = _tokenizer(model)
    words = whole_words(tokenizer)
    assert len(words) > 10
    for word, token_id in words.items():
        assert tokenizer(f"the {word}", add_special_tokens=False)["input_ids"][-1:] == [token_id]
    assert neighbours(tokenizer, word_table(model), k=2)


def test_augment_swaps_whole_words_only_and_reports_unchanged_text() -> None:
    near = {"great": ["good"], "app": ["site"]}
    assert augment("A great app, really.", near, 1.0, random.Random(0), lower=True) == "A good site, really."
    assert augment("A Great app2 apps", near, 1.0, random.Random(0), lower=True) == "A good app2 apps"  # case-folded, whole words
    assert augment("A Great app", near, 1.0, random.Random(0), lower=False) == "A Great site"  # a cased teacher: exact
    assert augment("A great app, really.", near, 0.0, random.Random(0), lower=True) is None
    assert augment("nothing to swap", near, 1.0, random.Random(0), lower=True) is None


def test_uncased_is_read_from_the_tokenizer(tiny_bert: Path, tmp_path: Path) -> None:
    assert is_uncased(_tokenizer(tiny_bert))
    assert not is_uncased(_tokenizer(build_roberta(tmp_path / "r")))


def test_variants_are_seeded_and_the_script_writes_them(tiny_bert: Path, tmp_path: Path) -> None:
    lines = ["i love this app", "great prices everyone", ""]
    first = augment_sentences(tiny_bert, lines, variants=2, p=1.0, k=2, seed=3)
    assert first == augment_sentences(tiny_bert, lines, variants=2, p=1.0, k=2, seed=3) and len(first) == 4
    assert all(len(v.split()) == len(s.split()) for v, s in zip(first, [lines[0]] * 2 + [lines[1]] * 2))
    assert "great prices everyone" not in first
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n")
    out = tmp_path / "aug.txt"
    done = subprocess.run([sys.executable, str(SCRIPT), "--model", str(tiny_bert), "--out", str(out), "--p", "1", "--k", "2",
                           "--variants", "2", "--seed", "3", str(text)], capture_output=True, text=True, check=True)  # fmt: skip
    assert "4 sentences written" in done.stdout and out.read_text().splitlines() == first
