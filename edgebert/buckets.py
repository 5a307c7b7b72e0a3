"""Sequence-length buckets of the static-shape targets (TFLite, TF.js): which lengths an export takes, and how an
input is fitted to one (the smallest bucket that holds its tokens; pad only to it).

An app, the runners, parity and bench all pick the bucket the same way: `pick`. Per-token outputs (rank >= 3:
hidden states, token logits) come back cut to the input's own width; per-sentence outputs are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from edgebert.config import DEFAULT_BUCKETS
from edgebert.errors import UserError


def normalize(seq_len: Any, minimum: int = 2) -> tuple[int, ...]:
    """`--seq-len` (an int, or a list of ints) as sorted distinct buckets; UserError for anything else."""
    values: Iterable[Any] = seq_len if isinstance(seq_len, (list, tuple)) else [seq_len]
    buckets = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"--seq-len must be an integer or a list of integers such as 16,32,64,128, got {seq_len!r}")
        if value < minimum:
            raise UserError(f"--seq-len must be at least {minimum} (tokens, [CLS] and [SEP] included), got {value}")
        buckets.append(value)
    if not buckets:
        raise UserError("--seq-len needs at least one token length, e.g. 128 or 16,32,64,128")
    return tuple(sorted(set(buckets)))


def lengths(seq_len: Any, default_buckets: bool, minimum: int = 2) -> tuple[int, ...]:
    """The export's lengths: `--seq-len` normalized; with `--buckets`, config.DEFAULT_BUCKETS below it added."""
    given = normalize(seq_len, minimum)
    if not default_buckets:
        return given
    if len(given) > 1:
        raise UserError(
            f"--buckets adds the default lengths below --seq-len; give --seq-len one length (the longest), or list "
            f"the lengths in --seq-len without --buckets (got {','.join(map(str, given))})"
        )
    return tuple(b for b in DEFAULT_BUCKETS if minimum <= b < given[0]) + given


def pick(length: int, buckets: tuple[int, ...] | list[int]) -> int:
    """The smallest bucket that holds `length` tokens; ValueError when even the largest is too short."""
    for bucket in sorted(buckets):
        if bucket >= length:
            return bucket
    longest = max(buckets)
    raise ValueError(
        f"inputs have {length} tokens but this export takes at most {longest} (its longest bucket); truncate to {longest}"
    )


def how_to_pick(buckets: tuple[int, ...] | list[int]) -> str:
    """The one line an app developer needs (export summary, docs)."""
    listed = ", ".join(str(b) for b in sorted(buckets))
    return f"buckets {listed}: tokenize, pad to the smallest bucket >= the token count (truncate to {max(buckets)})"


def fit(inputs: dict[str, np.ndarray], bucket: int, names: Iterable[str], dtype: Any = np.int32, side: str = "right") -> dict[str, np.ndarray]:
    """`inputs` [B, T] (T <= bucket) zero-padded to [B, bucket] as `dtype` (None: each its own; mask 0 on the padding),
    on the tokenizer's padding `side` (XLNet's is the left: its classifier reads the last token)."""
    feeds = {}
    for name in names:
        value = np.asarray(inputs[name]) if name in inputs else np.zeros_like(np.asarray(inputs["input_ids"]))
        feeds[name] = pad(value, bucket, dtype, side)
    return feeds


def pad(value: np.ndarray, width: int, dtype: Any = None, side: str = "right") -> np.ndarray:
    """[B, T] zero-padded to [B, width] (T <= width) on `side`, as `dtype` (default: its own). A copy into zeros:
    `np.pad` costs ~40 us an array, a third of a 16-token TFLite call's wall time, which an app does not pay."""
    out = np.zeros((value.shape[0], width), dtype=dtype or value.dtype)
    if side == "left":
        out[:, width - value.shape[1] :] = value
    else:
        out[:, : value.shape[1]] = value
    return out


def run_rows(
    feeds: dict[str, np.ndarray], width: int, call: Callable[[dict[str, np.ndarray]], dict[str, Any]], side: str = "right"
) -> dict[str, np.ndarray]:
    """`call` on each [1, bucket] row of `feeds`; every named output stacked over rows as float32, per-token outputs
    (rank >= 3) cut back to the input's `width` (the padding was on `side`)."""
    rows = [call({n: v[r : r + 1] for n, v in feeds.items()}) for r in range(next(iter(feeds.values())).shape[0])]
    return {name: cut(np.concatenate([np.asarray(row[name]) for row in rows]), width, side) for name in rows[0]}


def cut(output: np.ndarray, width: int, side: str = "right") -> np.ndarray:
    """A per-token output (rank >= 3, tokens on axis 1) cut to the `width` tokens that are not padding on `side`;
    other outputs unchanged."""
    output = np.asarray(output)
    if output.dtype.kind == "f":
        output = output.astype(np.float32)
    if output.ndim < 3:
        return output
    return output[:, output.shape[1] - width :] if side == "left" else output[:, :width]


def padding_side(manifest: dict[str, Any]) -> str:
    """The side an export's inputs are padded on: its tokenizer's, as export recorded it (older manifests: right)."""
    return str((manifest.get("model") or {}).get("padding_side") or "right")


def from_manifest(manifest: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """{bucket: its manifest entry} of an export (older manifests without `buckets`: their one `seq_len`)."""
    entries = manifest.get("buckets") or [{"seq_len": int(manifest["seq_len"])}]
    return {int(entry["seq_len"]): dict(entry) for entry in entries}
