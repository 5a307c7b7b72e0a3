"""The tokenizer half of vocabulary trimming (edgebert/compress/vocab.py): a WordPiece, SentencePiece Unigram or
(byte-level) BPE tokenizer rebuilt on the kept tokens, and how its output differs from the original's. Only the
vocabulary and the renumbered ids change: a Unigram piece keeps its score, so text whose best segmentation uses kept
pieces only is cut exactly as before. A BPE keeps the merges whose two parts and result are all kept, and the
selection keeps every part a kept token is merged from (`bpe_parents`): BPE applies, at each step, the
lowest-ranked merge among those that apply, so a word whose applied merges all survive is merged exactly as before,
and a dropped token falls back to its kept parts (down to the 256 byte symbols: never unknown)."""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert.errors import UserError, VerificationError

COUNT_BATCH = 2048  # texts per tokenizer call


def encode(tokenizer: Any, texts: Sequence[str]) -> Any:
    """Whole-text encodings (no specials, no truncation, no padding) as a transformers BatchEncoding."""
    return tokenizer(
        list(texts), add_special_tokens=False, truncation=False, padding=False, verbose=False,
        return_attention_mask=False, return_token_type_ids=False,
    )  # fmt: skip


@dataclass
class TokenizationChange:
    """How the trimmed tokenizer differs from the original on some text."""

    sentences: int
    words: int
    changed_words: int
    tokens_before: int
    tokens_after: int
    unk_before: int
    unk_after: int

    @property
    def changed_word_share(self) -> float:
        return self.changed_words / self.words if self.words else 0.0

    @property
    def unk_rate(self) -> float:
        return self.unk_after / self.tokens_after if self.tokens_after else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "sentences": self.sentences,
            "words": self.words,
            "changed_words": self.changed_words,
            "changed_word_share": round(self.changed_word_share, 6),
            "tokens": {"before": self.tokens_before, "after": self.tokens_after},
            "unk_rate": {
                "before": round(self.unk_before / self.tokens_before, 6) if self.tokens_before else 0.0,
                "after": round(self.unk_rate, 6),
            },
        }


TRIMMABLE = ("WordPiece", "Unigram", "BPE")
BPE_FILES = ("vocab.json", "merges.txt")  # a slow BPE tokenizer's files: the untrimmed ones would load the old vocabulary
SENTENCEPIECE_FILES = ("spiece.model", "sentencepiece.bpe.model", "spm.model", "tokenizer.model")
UNIGRAM_WORD_START = "\u2581"  # SentencePiece's word-start mark


def tokenizer_state(tokenizer: Any) -> dict[str, Any]:
    """The fast tokenizer's serialized state (tokenizer.json); a UserError unless its model can be trimmed."""
    if not getattr(tokenizer, "is_fast", False):
        raise UserError("vocabulary trimming needs a fast (tokenizer.json) tokenizer; re-save the model's tokenizer with transformers")
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    kind = state.get("model", {}).get("type")
    if kind not in TRIMMABLE:
        raise UserError(
            f"vocabulary trimming supports WordPiece, SentencePiece Unigram and BPE tokenizers; this model's tokenizer is {kind}"
        )
    return state


def piece_prefix(state: dict[str, Any]) -> str:
    """The mark a piece carries that is not part of its characters: WordPiece's "##" continuation (a BPE's, if it has
    one), Unigram's word start."""
    model = state["model"]
    return UNIGRAM_WORD_START if model["type"] == "Unigram" else (model.get("continuing_subword_prefix") or "")


def _merge_tokens(merge: Any, prefix: str) -> tuple[str, str, str]:
    """A BPE merge as (left, right, the token it makes): tokenizers writes "left right" (older files) or [left, right];
    a continuation `prefix` on the right part is dropped in the result."""
    left, right = merge.split(" ", 1) if isinstance(merge, str) else (str(merge[0]), str(merge[1]))
    return left, right, left + (right[len(prefix) :] if prefix and right.startswith(prefix) else right)


def bpe_parents(tokenizer: Any) -> dict[int, set[int]]:
    """For a BPE tokenizer, each token id's parts by every merge that makes it, transitively (all must be kept for
    the token to be made as before); {} for other models."""
    state = tokenizer_state(tokenizer)
    model = state["model"]
    if model["type"] != "BPE":
        return {}
    vocab, prefix = model["vocab"], piece_prefix(state)
    direct: dict[int, set[int]] = {}
    for merge in model.get("merges") or []:
        left, right, result = _merge_tokens(merge, prefix)
        if result in vocab and left in vocab and right in vocab:
            direct.setdefault(vocab[result], set()).update((vocab[left], vocab[right]))
    closed: dict[int, set[int]] = {}

    def ancestors(token: int) -> set[int]:
        if token not in closed:
            closed[token] = set()  # merges only join shorter tokens: no cycle, but guard anyway
            found = set(direct.get(token, ()))
            for part in direct.get(token, ()):
                found |= ancestors(part)
            closed[token] = found
        return closed[token]

    return {token: ancestors(token) for token in direct}


def post_processor_tokens(node: Any) -> set[str]:
    """Token strings a post-processor inserts (TemplateProcessing special_tokens, Bert/RobertaProcessing cls/sep)."""
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("tokens"), list) and isinstance(node.get("ids"), list):
            found.update(node["tokens"])
        for key in ("cls", "sep"):
            value = node.get(key)
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
                found.add(value[0])
        for value in node.values():
            found |= post_processor_tokens(value)
    elif isinstance(node, list):
        for value in node:
            found |= post_processor_tokens(value)
    return found


def _remap_post_processor(node: Any, token_to_id: dict[str, int]) -> None:
    """Renumber the special-token ids a post-processor holds, in place."""
    if isinstance(node, dict):
        if isinstance(node.get("tokens"), list) and isinstance(node.get("ids"), list):
            node["ids"] = [token_to_id[t] for t in node["tokens"]]
        for key in ("cls", "sep"):
            value = node.get(key)
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
                node[key] = [value[0], token_to_id[value[0]]]
        for value in node.values():
            _remap_post_processor(value, token_to_id)
    elif isinstance(node, list):
        for value in node:
            _remap_post_processor(value, token_to_id)


def trimmed_tokenizer_state(tokenizer: Any, kept_ids: list[int]) -> tuple[dict[str, Any], list[str]]:
    """(tokenizer.json state, vocab.txt lines: WordPiece only) for the kept ids: same normalizer, pre-tokenizer,
    decoder and model settings; the vocabulary, added tokens, post-processor and padding renumbered."""
    state = copy.deepcopy(tokenizer_state(tokenizer))
    old_tokens = tokenizer.convert_ids_to_tokens(kept_ids)
    token_to_id = {t: new for new, t in enumerate(old_tokens)}
    new_ids = dict(zip(kept_ids, range(len(kept_ids))))
    model = state["model"]
    if model["type"] == "Unigram":  # [piece, score] in id order; the unknown piece is always kept (a special)
        pieces = model["vocab"]
        model["vocab"] = [pieces[i] for i in kept_ids if i < len(pieces)]
        if model.get("unk_id") is not None:
            model["unk_id"] = new_ids[model["unk_id"]]
    else:
        old_vocab = model["vocab"]
        model["vocab"] = {t: token_to_id[t] for t in old_tokens if t in old_vocab}
    if model["type"] == "BPE":  # the merges between kept tokens, in their order (rank)
        prefix = piece_prefix(state)
        model["merges"] = [m for m in model.get("merges") or [] if all(t in token_to_id for t in _merge_tokens(m, prefix))]
    for added in state.get("added_tokens") or []:
        added["id"] = new_ids[added["id"]]
    _remap_post_processor(state.get("post_processor"), token_to_id)
    padding = state.get("padding")
    if isinstance(padding, dict) and padding.get("pad_token") in token_to_id:
        padding["pad_id"] = token_to_id[padding["pad_token"]]
    lines = sorted(model["vocab"], key=model["vocab"].__getitem__) if model["type"] == "WordPiece" else []
    return state, lines


def build_trimmed_tokenizer(tokenizer: Any, kept_ids: list[int]) -> Any:
    """A transformers fast tokenizer (same class and settings as `tokenizer`) over the kept ids, renumbered."""
    from edgebert.modelio import load_tokenizer

    state, lines = trimmed_tokenizer_state(tokenizer, kept_ids)
    new_ids = dict(zip(kept_ids, range(len(kept_ids))))
    with tempfile.TemporaryDirectory(prefix="edgebert-vocab-") as tmp:
        tokenizer.save_pretrained(tmp)
        Path(tmp, "tokenizer.json").write_text(json.dumps(state, ensure_ascii=False))
        if lines:
            Path(tmp, "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for name in SENTENCEPIECE_FILES + BPE_FILES:  # the untrimmed files would load the old vocabulary
            Path(tmp, name).unlink(missing_ok=True)
        config_path = Path(tmp, "tokenizer_config.json")
        config = json.loads(config_path.read_text())
        if isinstance(config.get("added_tokens_decoder"), dict):
            config["added_tokens_decoder"] = {str(new_ids[int(k)]): v for k, v in config["added_tokens_decoder"].items()}
        config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False))
        new = load_tokenizer(tmp)
    _check_tokenizer(tokenizer, new, kept_ids)
    return new


def _check_tokenizer(old: Any, new: Any, kept_ids: list[int]) -> None:
    """The new tokenizer has exactly the kept tokens, in order, and every special token keeps its role."""
    if len(new) != len(kept_ids) or new.convert_ids_to_tokens(list(range(len(kept_ids)))) != old.convert_ids_to_tokens(kept_ids):
        raise VerificationError("the trimmed tokenizer does not hold exactly the kept tokens in their original order")
    new_ids = dict(zip(kept_ids, range(len(kept_ids))))
    for attr in old.SPECIAL_TOKENS_ATTRIBUTES:
        if attr == "additional_special_tokens":
            continue
        old_id = getattr(old, f"{attr}_id", None)
        if old_id is not None and getattr(new, f"{attr}_id", None) != new_ids[old_id]:
            raise VerificationError(f"the trimmed tokenizer lost the role of {attr} ({getattr(old, attr)})")


def tokenization_change(old: Any, new: Any, texts: Sequence[str]) -> TokenizationChange:
    """Words (the tokenizers' pre-tokenised words) whose pieces differ, and [UNK] counts, old vs new tokenizer."""
    stats = TokenizationChange(len(texts), 0, 0, 0, 0, 0, 0)
    for start in range(0, len(texts), COUNT_BATCH):
        batch = list(texts[start : start + COUNT_BATCH])
        for a, b in zip(encode(old, batch).encodings, encode(new, batch).encodings):
            before, after = _words(a.tokens, a.word_ids), _words(b.tokens, b.word_ids)
            stats.words += len(before)
            stats.changed_words += sum(1 for w in set(before) | set(after) if before.get(w) != after.get(w))
            stats.tokens_before += len(a.ids)
            stats.tokens_after += len(b.ids)
            stats.unk_before += a.tokens.count(old.unk_token)
            stats.unk_after += b.tokens.count(new.unk_token)
    return stats


def _words(tokens: list[str], word_ids: list[int | None]) -> dict[int, tuple[str, ...]]:
    words: dict[int, list[str]] = {}
    for token, word in zip(tokens, word_ids):
        words.setdefault(-1 if word is None else word, []).append(token)
    return {w: tuple(t) for w, t in words.items()}
