"""Shared argument validators: the CLI, the Python API and the recipe loader check values through these, so every
bad value gets the same one-line UserError (what is wrong, what to do) before anything is written."""

from __future__ import annotations

import codecs
import gzip
import math
from pathlib import Path
from typing import Any

from edgebert.errors import UserError

# Bytes of a text file decoded at a time when it is checked up front (to its end: `text_file`).
TEXT_CHUNK_BYTES = 1 << 20
SEED_LIMIT = 2**32  # numpy's seed range, which transformers.set_seed feeds


def integer(name: str, value: Any, minimum: int | None = 1, maximum: int | None = None, hint: str = "") -> int:
    """`value` as an int in [minimum, maximum] (bools and floats refused); UserError naming `name` (and `hint`)."""
    why = f" ({hint})" if hint else ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{name} must be an integer{why}, got {value!r}")
    if minimum is not None and value < minimum:
        raise UserError(f"{name} must be at least {minimum}{why}, got {value}")
    if maximum is not None and value > maximum:
        raise UserError(f"{name} must be at most {maximum}{why}, got {value}")
    return value


def optional_integer(name: str, value: Any, minimum: int | None = 1, maximum: int | None = None, hint: str = "") -> int | None:
    """None, or `integer(...)`."""
    return None if value is None else integer(name, value, minimum, maximum, hint)


def seed(name: str, value: Any) -> int:
    """A random seed: an integer in [0, 2**32)."""
    return integer(name, value, 0, SEED_LIMIT - 1)


def number(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """`value` as a finite float within the interval given by low/high (open ends when *_open); UserError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{name} must be a number, got {value!r}")
    value = float(value)
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    interval = f"{left}{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}{right}"
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if not math.isfinite(value) or too_low or too_high:
        raise UserError(f"{name} must be a finite number in {interval}, got {value}")
    return value


def optional_number(name: str, value: Any, low: float | None = None, high: float | None = None, **kwargs: Any) -> float | None:
    """None, or `number(...)`."""
    return None if value is None else number(name, value, low, high, **kwargs)


def path_like(name: str, value: Any, optional: bool = True) -> Path | None:
    """A str / os.PathLike as a Path (None allowed when `optional`); UserError for anything else or an empty string."""
    if value is None and optional:
        return None
    if isinstance(value, Path):
        return value
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{name} must be a path (a non-empty str or pathlib.Path), got {value!r}")
    return Path(value)


def choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """`value` if it is one of `choices` (strings); UserError listing them otherwise."""
    if not isinstance(value, str) or value not in choices:
        raise UserError(f"{name} {value!r} is unknown; choose one of: {', '.join(choices)}")
    return value


def text_file(name: str, path: str | Path) -> Path:
    """`path` if it is a readable UTF-8 text file (.gz: its decompressed text) with no NUL bytes, read to its end in
    chunks (a file that turns binary after megabytes is found now, not when a later stage reads that far).

    UserError naming the file when it is missing, unreadable, truncated, or binary / another encoding.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"{name} {path} is not a file; pass a UTF-8 text file")
    decoder, offset = codecs.getincrementaldecoder("utf-8")(), 0
    try:
        with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as fh:
            while chunk := fh.read(TEXT_CHUNK_BYTES):
                _check_chunk(name, path, decoder, chunk, offset)
                offset += len(chunk)
        _check_chunk(name, path, decoder, b"", offset, final=True)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UserError(f"cannot read {name} {path} ({type(exc).__name__}: {exc})") from exc
    return path


def _check_chunk(name: str, path: Path, decoder: codecs.IncrementalDecoder, chunk: bytes, offset: int, final: bool = False) -> None:
    """UserError naming `path` when `chunk` (at byte `offset`) holds NUL bytes or breaks UTF-8."""
    try:
        decoder.decode(chunk, final=final)
    except UnicodeDecodeError as exc:
        raise UserError(f"{name} {path} is not UTF-8 text (bad byte at offset {offset + exc.start}); pass a UTF-8 text file") from None
    if b"\x00" in chunk:
        raise UserError(f"{name} {path} is binary (it holds NUL bytes), not text; pass a UTF-8 text file")


def check_text_bytes(name: str, path: Path, data: bytes, final: bool = True) -> None:
    """UserError naming `path` unless `data` is UTF-8 text without NUL bytes (`final=False`: may end mid-character)."""
    _check_chunk(name, path, codecs.getincrementaldecoder("utf-8")(), data, 0, final=final)


def read_text(name: str, path: str | Path) -> str:
    """The whole UTF-8 text of a (small) file such as a recipe or a config; UserError naming it otherwise."""
    path = Path(path).expanduser()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {name} {path} ({type(exc).__name__}: {exc})") from exc
    check_text_bytes(name, path, data)
    return data.decode("utf-8")


def not_utf8(name: str, path: Path, exc: UnicodeDecodeError) -> UserError:
    """The UserError for a file found not to be UTF-8 while it was being read (raise it `from exc`)."""
    return UserError(f"{name} {path} is not UTF-8 text (bad byte near offset {exc.start}); pass a UTF-8 text file")
