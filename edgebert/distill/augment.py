"""Word-replacement augmentation of distillation text (after TinyBERT's data augmentation).

Each sentence is rewritten with some whole words swapped for one of their nearest neighbours in the teacher's own
input word-embedding table (cosine), so the teacher, which then embeds every variant, labels more sentences around
the ones the student has. No masked-LM head or GloVe table is needed (the packaged teacher has neither).

Whole words are the vocabulary entries that the teacher's tokenizer gives back as one token when they stand alone
in a sentence (WordPiece `good`, byte-level BPE `Ġgood`, SentencePiece `▁good`): pieces such as `##ing` and special
tokens never replace a word or get replaced.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from edgebert.errors import UserError

WORD = re.compile(r"\b[A-Za-z]{2,}\b")  # the words a sentence may have swapped: ASCII letters, as the candidates


def word_table(model_dir: Path) -> np.ndarray:
    """The model's input word-embedding matrix [vocab, width], loaded the safe way (`edgebert.modelio`)."""
    from transformers import AutoModel

    from edgebert.modelio import load_weights

    model, _ = load_weights(AutoModel, model_dir)
    return model.get_input_embeddings().weight.detach().float().numpy()


def whole_words(tokenizer: Any) -> dict[str, int]:
    """{word: token id} for every ASCII-letter vocabulary entry that the tokenizer reads back as that one token in
    the middle of a sentence (lower-case words for an uncased tokenizer)."""
    special = set(tokenizer.all_special_ids)
    spellings: dict[str, set[int]] = {}  # a word may have several entries (BPE `good` and `Ġgood`)
    for token, i in tokenizer.get_vocab().items():
        word = tokenizer.convert_tokens_to_string([token]).strip()
        if i not in special and WORD.fullmatch(word):
            spellings.setdefault(word, set()).add(i)
    words = sorted(spellings)
    ids = tokenizer([f"a {w}" for w in words], add_special_tokens=False)["input_ids"]  # "a": a word in front of it
    prefix = len(tokenizer("a", add_special_tokens=False)["input_ids"])
    return {w: got[prefix] for w, got in zip(words, ids) if len(got) == prefix + 1 and got[prefix] in spellings[w]}


def neighbours(tokenizer: Any, table: np.ndarray, k: int) -> dict[str, list[str]]:
    """{whole word: its k nearest whole words by cosine of their rows in `table`}, nearest first."""
    words = whole_words(tokenizer)
    names, ids = list(words), np.array(list(words.values()))
    if len(names) <= k:
        raise UserError(f"augmentation needs more than {k} whole words in the teacher's vocabulary, found {len(names)}")
    unit = table[ids] / np.maximum(np.linalg.norm(table[ids], axis=1, keepdims=True), 1e-12)
    near: dict[str, list[str]] = {}
    for start in range(0, len(ids), 2048):
        sims = unit[start : start + 2048] @ unit.T
        for row, sim in enumerate(sims):
            sim[start + row] = -np.inf  # not itself
            top = np.argpartition(-sim, k)[:k]
            near[names[start + row]] = [names[j] for j in top[np.argsort(-sim[top], kind="stable")]]
    return near


def is_uncased(tokenizer: Any) -> bool:
    """Whether the tokenizer reads `Good` as it reads `good`."""
    return tokenizer("Good", add_special_tokens=False)["input_ids"] == tokenizer("good", add_special_tokens=False)["input_ids"]


def augment(text: str, near: dict[str, list[str]], p: float, rng: random.Random, lower: bool) -> str | None:
    """`text` with each word that has neighbours swapped with probability `p` for one of them (looked up lower-cased
    when `lower`: an uncased teacher); None when nothing changed."""
    pieces, last, changed = [], 0, False
    for match in WORD.finditer(text):
        options = near.get(match.group().lower() if lower else match.group())
        if options and rng.random() < p:
            pieces += [text[last : match.start()], rng.choice(options)]
            last, changed = match.end(), True
    return "".join(pieces + [text[last:]]) if changed else None


def augment_sentences(
    model_dir: Path, sentences: Iterable[str], variants: int, p: float, k: int, seed: int
) -> list[str]:  # fmt: skip
    """`variants` rewrites of each sentence (those that changed), seeded: the same inputs give the same text."""
    from edgebert.modelio import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    near = neighbours(tokenizer, word_table(model_dir), k)
    lower, rng, out = is_uncased(tokenizer), random.Random(seed), []
    for line in sentences:
        line = line.strip()
        for _ in range(variants if line else 0):
            new = augment(line, near, p, rng, lower)
            if new:
                out.append(new)
    return out
