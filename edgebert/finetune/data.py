"""finetune's labelled rows: CSV or TSV (a header row, or the names `--header` gives) and JSON Lines, .gz ok, read into
`Rows`; the held-out split. Every problem is one UserError naming the file, the line and the column."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert import validate
from edgebert.errors import UserError

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
DEFAULT_SCORE_COLUMN = "score"  # read when the file has it and no other score column is named
MIN_HELD_OUT = 2  # rows: a Spearman or a ranking needs two


@dataclass(frozen=True)
class Columns:
    """Which columns hold what. `score`: the score column's name, `score_required`: whether it must be there (else it
    is read only when present), and why (`score_for`: the loss that reads it); `header`: the names of a header-less
    CSV/TSV's columns."""

    sentence1: str
    sentence2: str
    score: str | None = None
    score_required: bool = False
    negative: str | None = None
    header: tuple[str, ...] | None = None
    score_for: str | None = None

    def flag(self, name: str) -> str:
        """The option that named column `name` (and the loss that needs it), for messages."""
        score = "--score-column" + (f"; --loss {self.score_for} learns from scores, mnrl from unscored pairs" if self.score_for else "")
        roles = (("--sentence1-column", self.sentence1), ("--sentence2-column", self.sentence2),
                 (score, self.score), ("--negative-column", self.negative))  # fmt: skip
        return next(flag for flag, column in roles if column == name)


@dataclass
class Rows:
    """Labelled rows read from `source`: pairs, their scores (None: unscored) and negatives (None: pairs only)."""

    flag: str  # the option that named the file (--data, --held-out-file), for messages
    source: str
    columns: tuple[str, ...]  # the columns the file has
    sentence1: list[str]
    sentence2: list[str]
    scores: list[float] | None = None
    negatives: list[str] | None = None
    score_column: str | None = None

    def __len__(self) -> int:
        return len(self.sentence1)

    def subset(self, keep: list[int]) -> Rows:
        """The rows at the indices `keep`, in that order."""
        pick = lambda values: None if values is None else [values[i] for i in keep]  # noqa: E731
        return Rows(self.flag, self.source, self.columns, pick(self.sentence1), pick(self.sentence2), pick(self.scores),
                    pick(self.negatives), self.score_column)  # fmt: skip

    @property
    def where(self) -> str:
        """`--data pairs.csv`: the option and the file, for messages."""
        return f"{self.flag} {self.source}"

    def pair_keys(self) -> list[tuple[str, str]]:
        """Each row's two sentences, whitespace-normalised: what identifies a pair."""
        return [(_normal(a), _normal(b)) for a, b in zip(self.sentence1, self.sentence2)]


def _normal(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------------------------------------ reading


def file_format(flag: str, path: Path) -> str:
    """csv, tsv or jsonl by the file's extension (a .gz after it is decompressed); UserError otherwise."""
    name = path.name.lower().removesuffix(".gz")
    kind = FORMATS.get(Path(name).suffix)
    if kind is None:
        raise UserError(f"{flag} {path}: unknown format; pass a .csv or .tsv file with a header row, or a .jsonl file (.gz ok)")
    return kind


def read_rows(flag: str, path: str | Path, columns: Columns) -> Rows:
    """The labelled rows of `path` (`flag` names it in messages)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"{flag} {path} is not a file; pass a .csv, .tsv or .jsonl file of labelled pairs")
    kind = file_format(flag, path)
    if kind == "jsonl" and columns.header:
        raise UserError(f"--header names the columns of a CSV/TSV file without a header row; {flag} {path} is JSON Lines, whose rows name theirs")
    validate.text_file(flag, path)
    records = _json_records(path) if kind == "jsonl" else _table_records(path, "\t" if kind == "tsv" else ",", columns.header)
    return _collect(flag, str(path), records, columns)


def _open(path: Path) -> Any:
    """The text of `path` (.gz decompressed; a UTF-8 byte-order mark, as spreadsheets write, dropped)."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _table_records(path: Path, delimiter: str, header: tuple[str, ...] | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, {column: value}) of a CSV/TSV; the first record is the header unless `header` names the columns. The
    first item is (0, {name: name}): the columns."""
    with _open(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            names = list(header) if header else next((row for row in reader if any(c.strip() for c in row)), [])
            yield 0, {name.strip(): name.strip() for name in names}
            for row in reader:
                if any(cell.strip() for cell in row):
                    yield reader.line_num, {name.strip(): value for name, value in zip(names, row)}
        except csv.Error as exc:
            raise UserError(f"{path}:{reader.line_num}: not readable as {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})") from exc


def _json_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) of a JSON Lines file, after (0, {key: key}) of its first row's keys: the columns."""
    first = True
    with _open(path) as fh:
        for line, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}:{line}: not valid JSON ({exc.msg}); one JSON object per line") from exc
            if not isinstance(record, dict):
                raise UserError(f"{path}:{line}: a JSON {type(record).__name__}, not an object; one JSON object per line")
            if first:
                yield 0, {key: key for key in record}
                first = False
            yield line, record


def _collect(flag: str, source: str, records: Iterator[tuple[int, dict[str, Any]]], columns: Columns) -> Rows:
    """Rows from `records` (the first one: the columns), each value checked."""
    where = f"{flag} {source}"
    names = tuple(next(records, (0, {}))[1])
    score = columns.score if columns.score in names or columns.score_required else None
    wanted = [c for c in (columns.sentence1, columns.sentence2, score, columns.negative) if c is not None]
    for column in wanted:
        if column not in names:
            raise UserError(f"{where}: no column {column!r} ({columns.flag(column)}); its columns: {', '.join(names) or 'none'}")
    rows = Rows(flag, source, names, [], [], [] if score else None, [] if columns.negative else None, score)
    for line, record in records:
        rows.sentence1.append(_text(where, line, record, columns.sentence1, columns))
        rows.sentence2.append(_text(where, line, record, columns.sentence2, columns))
        if rows.scores is not None:
            rows.scores.append(_number(where, line, record, score, columns))
        if rows.negatives is not None:
            rows.negatives.append(_text(where, line, record, columns.negative, columns))
    if not rows:
        raise UserError(f"{where} has no rows under its header; pass a file of labelled pairs")
    return rows


def _cell(where: str, line: int, record: dict[str, Any], column: str, columns: Columns) -> Any:
    if column not in record or record[column] is None:
        raise UserError(f"{_at(where, line)}: column {column!r} ({columns.flag(column)}) is missing from this row")
    return record[column]


def _text(where: str, line: int, record: dict[str, Any], column: str, columns: Columns) -> str:
    value = _cell(where, line, record, column, columns)
    if not isinstance(value, str):
        raise UserError(f"{_at(where, line)}: column {column!r} holds {json.dumps(value)[:40]}, not text")
    if not value.strip():
        raise UserError(f"{_at(where, line)}: column {column!r} is an empty sentence; fill it or remove the row")
    return value.strip()


def _number(where: str, line: int, record: dict[str, Any], column: str, columns: Columns) -> float:
    value = _cell(where, line, record, column, columns)
    try:
        number = float(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        shown = value if isinstance(value, str) else json.dumps(value)
        raise UserError(f"{_at(where, line)}: column {column!r}: {shown[:40]!r} is not a number; scores must be finite numbers")
    return number


def _at(where: str, line: int) -> str:
    """`--data pairs.csv:7`: the flag, the file and the line."""
    return f"{where}:{line}"


# ------------------------------------------------------------------------------------------------ held out


def hash_share(key: tuple[str, str]) -> float:
    """Where a row falls in [0, 1): a hash of its two sentences (`Rows.pair_keys`), so a row's side of the split
    depends neither on the order of the rows nor on the others."""
    digest = hashlib.sha256("\n".join(key).encode()).hexdigest()
    return int(digest[:13], 16) / 16**13


def split(rows: Rows, share: float) -> tuple[Rows, Rows | None]:
    """(training rows, held-out rows): the rows whose hash falls below `share` are held out (none for 0)."""
    if share <= 0:
        return rows, None
    shares = [hash_share(key) for key in rows.pair_keys()]
    held = [i for i, s in enumerate(shares) if s < share]
    train = [i for i, s in enumerate(shares) if s >= share]
    if len(held) < MIN_HELD_OUT:
        raise UserError(
            f"{rows.where}: --held-out {share:g} holds out {len(held)} of its {len(rows)} rows; choosing the epoch kept "
            f"needs at least {MIN_HELD_OUT}: raise --held-out, add rows, or pass --held-out 0"
        )
    if not train:
        raise UserError(f"{rows.where}: --held-out {share:g} leaves no row to train on; lower it")
    return rows.subset(train), rows.subset(held)


def without_pairs(rows: Rows, held: Rows) -> tuple[Rows, int]:
    """`rows` without the pairs `held` has (in either order), and how many were dropped."""
    seen = {key for a, b in held.pair_keys() for key in ((a, b), (b, a))}
    keep = [i for i, key in enumerate(rows.pair_keys()) if key not in seen]
    if not keep:
        raise UserError(f"{rows.where}: every pair is in {held.where}; nothing is left to train on")
    return rows.subset(keep), len(rows) - len(keep)


def check_held_out(held: Rows) -> None:
    """Enough held-out rows, and scores that differ (Spearman of constant scores is undefined)."""
    if len(held) < MIN_HELD_OUT:
        raise UserError(f"{held.where}: choosing the epoch kept needs at least {MIN_HELD_OUT} held-out rows, it has {len(held)}")
    if held.scores is not None and len(set(held.scores)) < 2:
        fix = "hold out more rows, or pass --held-out 0" if held.flag == "--data" else "give it rows whose scores differ"
        raise UserError(f"{held.where}: every held-out score is {held.scores[0]:g}; Spearman needs scores that differ: {fix}")
