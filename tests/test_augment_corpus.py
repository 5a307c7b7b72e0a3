"""benchmarks/augment_corpus.py: word-replacement variants of distillation text from the teacher's own word table."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "augment_corpus.py"


def _module():
    spec = importlib.util.spec_from_file_location("augment_corpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_neighbours_are_the_nearest_whole_words_by_cosine(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    m = _module()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    table = m.word_table(tiny_bert)
    near = m.neighbours(tokenizer, table, k=3)
    vocab = tokenizer.get_vocab()
    assert "great" in near and "##a" not in near and "[CLS]" not in near and "a" not in near  # whole words only
    def cos(a: str, b: str) -> float:
        u, v = table[vocab[a]], table[vocab[b]]
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    sims = {w: cos("great", w) for w in near if w != "great"}
    assert near["great"] == sorted(sims, key=sims.get, reverse=True)[:3]


def test_augment_swaps_whole_words_only_and_reports_unchanged_text(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    m = _module()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    pre = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str
    near = {"great": ["good"], "app": ["site"]}
    assert m.augment("A great app, really.", pre, near, 1.0, random.Random(0)) == "A good site, really."
    assert m.augment("A great app, really.", pre, near, 0.0, random.Random(0)) is None
    assert m.augment("nothing to swap", pre, near, 1.0, random.Random(0)) is None


def test_script_writes_seeded_variants(tiny_bert: Path, tmp_path: Path) -> None:
    text = tmp_path / "in.txt"
    text.write_text("i love this app\ngreat prices everyone\n\n")
    outs = []
    for name in ("a.txt", "b.txt"):
        out = tmp_path / name
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "--model", str(tiny_bert), "--out", str(out), "--p", "1", "--k", "2",
             "--variants", "2", str(text)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert "sentences written" in done.stdout
        outs.append(out.read_text().splitlines())
    assert outs[0] == outs[1] and len(outs[0]) == 4  # two variants of each non-empty line, same seed, same text
    assert all(len(v.split()) == len(s.split()) for v, s in zip(outs[0], ["i love this app"] * 2 + ["great prices everyone"] * 2))
    assert outs[0][2] != "great prices everyone"
