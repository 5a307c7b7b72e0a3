#!/usr/bin/env python
"""Word-replacement augmentation of distillation text (an issue 15 experiment, after TinyBERT's data augmentation):
each sentence rewritten with some whole words swapped for one of their nearest neighbours in the teacher's own
word-embedding table (cosine). The teacher then embeds every variant, so the student sees more sentences around the
ones it has, labelled by the teacher. No MLM head or GloVe needed (the packaged teacher has neither).

    .venv/bin/python benchmarks/augment_corpus.py --model TEACHER_DIR --out aug.txt [--variants 1] [--p 0.3] FILE...

FILE: one sentence per line (e.g. a pipeline work dir's corpus/*.txt, which already exclude the checkpoint and bench
pairs' sentences; augmenting the raw STS-B file would leak variants of the held-out sentences).
"""

from __future__ import annotations

import argparse
import os
import random
from pathlib import Path

os.environ.setdefault("USE_TF", "0")  # transformers would import TensorFlow (slow, noisy) for nothing

import numpy as np


def word_table(model_dir: Path) -> np.ndarray:
    """The teacher's input word-embedding matrix [vocab, width], loaded the safe way (`edgebert.modelio`)."""
    from transformers import AutoModel

    from edgebert.modelio import load_weights

    model, _ = load_weights(AutoModel, model_dir)
    return model.get_input_embeddings().weight.detach().float().numpy()


def neighbours(tokenizer, table: np.ndarray, k: int) -> dict[str, list[str]]:
    """{whole word: its k nearest whole words by cosine}; whole words = alphabetic, non-special, not '##' pieces."""
    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_tokens)
    words = sorted((t, i) for t, i in vocab.items() if t.isalpha() and t.isascii() and len(t) > 1 and t not in special)
    ids = np.array([i for _, i in words])
    unit = table[ids] / np.linalg.norm(table[ids], axis=1, keepdims=True)
    result: dict[str, list[str]] = {}
    for start in range(0, len(ids), 2048):
        sims = unit[start : start + 2048] @ unit.T
        for row, sim in enumerate(sims):
            sim[start + row] = -1.0  # not itself
            top = np.argpartition(-sim, k)[:k]
            result[words[start + row][0]] = [words[j][0] for j in top[np.argsort(-sim[top])]]
    return result


def augment(text: str, pre_tokenize, near: dict[str, list[str]], p: float, rng: random.Random) -> str | None:
    """`text` with each replaceable word swapped with probability p (lower-cased: the teacher is uncased); None when
    nothing changed."""
    pieces, last, changed = [], 0, False
    for word, (start, end) in pre_tokenize(text):
        options = near.get(word.lower())
        if options and rng.random() < p:
            pieces += [text[last:start], rng.choice(options)]
            last, changed = end, True
    return "".join(pieces + [text[last:]]) if changed else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--variants", type=int, default=1, help="rewrites per sentence")
    ap.add_argument("--p", type=float, default=0.3, help="chance that a replaceable word is swapped")
    ap.add_argument("--k", type=int, default=8, help="neighbours a word may be swapped for")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("files", nargs="+", type=Path)
    a = ap.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(a.model)
    near = neighbours(tokenizer, word_table(a.model), a.k)
    pre_tokenize = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str
    rng = random.Random(a.seed)
    out = []
    for path in a.files:
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            for _ in range(a.variants if line else 0):
                new = augment(line, pre_tokenize, near, a.p, rng)
                if new:
                    out.append(new)
    a.out.write_text("\n".join(out) + "\n", encoding="utf-8")
    sample = ", ".join(f"{w}: {' '.join(near[w][:4])}" for w in ("good", "man", "slicing", "president") if w in near)
    print(f"{len(out)} sentences written to {a.out}; neighbours, e.g. {sample}")


if __name__ == "__main__":
    main()
