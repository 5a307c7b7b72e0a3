"""One text's token ids the way an app computes them: the model's own Rust tokenizer (`tokenizers`), called directly.

transformers' tokenizer call wraps that Rust tokenizer in Python (truncation and padding state, BatchEncoding,
tensor conversion): ~70 us a text in a warm loop (a 15-token sentence) and 135-160 us between model calls (the
bench's tokenize column), on an AMD EPYC: a third of a 16-token TFLite call there. An app tokenizes natively (Kotlin,
Swift, C++ or JS) and pays none of it. The ids must be the same: `check` compares them with transformers' on the
bench's texts, and a tokenizer that differs, or has no Rust backend, is timed through transformers instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgebert.parity import encode

RUST = "tokenizers (Rust, called directly)"
TRANSFORMERS = "transformers"


class AppTokenizer:
    """`tokenizer` truncated to `max_length`, unpadded, as [1, T] int64 arrays (the keys of `parity.encode`)."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.rust = _rust_copy(tokenizer, max_length)
        self.name = RUST if self.rust is not None else TRANSFORMERS

    def __call__(self, text: str) -> dict[str, np.ndarray]:
        if self.rust is None:
            return encode(self.tokenizer, [text], self.max_length, pad_to_seq_len=False)
        e = self.rust.encode(text)
        return {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
        }

    def check(self, texts: Sequence[str], expected: Sequence[dict[str, np.ndarray]]) -> str | None:
        """None when every text's arrays equal `expected` (transformers' call on each text: `parity.encode`); else
        the first text that differs, after which this tokenizer times transformers' call (the ids are what the model
        sees: they are not traded for speed)."""
        if self.rust is None:
            return None
        for text, theirs in zip(texts, expected, strict=True):
            ours = self(text)
            if set(ours) != set(theirs) or any(not np.array_equal(ours[k], theirs[k]) for k in theirs):
                self.rust, self.name = None, TRANSFORMERS
                return text
        return None


def _rust_copy(tokenizer: Any, max_length: int) -> Any:
    """A private copy of a fast tokenizer's Rust backend set up as transformers' call sets it (truncation to
    `max_length`, longest first, on the tokenizer's truncation side; no padding), or None for a slow tokenizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is None:
        return None
    from tokenizers import Tokenizer

    rust = Tokenizer.from_str(backend.to_str())
    rust.no_padding()
    rust.enable_truncation(max_length, strategy="longest_first", direction=getattr(tokenizer, "truncation_side", "right"))
    return rust
