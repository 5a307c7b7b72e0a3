"""The pipeline's data inputs: local files, or public datasets loaded through `datasets.load_dataset`.

An input value is a path (relative to the working directory on the command line, to the recipe file in a recipe)
or a dataset spec:

- `glue/TASK:SPLIT`   one of GLUE's tasks, e.g. `glue/stsb:train` (STS pairs) or `glue/sst2:train` (sentences);
- `hf:NAME:SPLIT` or `hf:NAME:CONFIG:SPLIT`   any Hugging Face dataset, e.g. `hf:sentence-transformers/stsb:train`.

Datasets are loaded and converted in memory when the inputs are checked (before anything is written), and written
into the work dir as the csv / text files the stages read. With the Hub unreachable, loading fails at once with one
line (`edgebert.data.load_hf_dataset`).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebert.data import SPEC_FORMS, DatasetSpec, distinct_sentences, is_dataset_spec, parse_dataset_spec
from edgebert.errors import UserError

__all__ = ["DatasetSpec", "Input", "is_dataset_spec", "parse_dataset_spec", "resolve_input"]

STS_SCORE_COLUMNS = ("score", "label", "similarity_score", "relatedness_score")
SENTENCE_COLUMNS = ("sentence", "text", "sentence1", "sentence2", "question", "premise", "hypothesis")


# ------------------------------------------------------------------------------------------------ conversions


def _column(ds: Any, names: tuple[str, ...], spec: str, what: str) -> str:
    for name in names:
        if name in ds.column_names:
            return name
    raise UserError(f"dataset '{spec}' has no {what} column (one of {', '.join(names)}; it has {', '.join(ds.column_names)})")


def sts_rows_from_dataset(ds: Any, spec: str) -> list[tuple[str, str, float]]:
    """(sentence1, sentence2, score) rows of an STS dataset (columns sentence1, sentence2 and score or label).

    Rows without a gold score (GLUE's test split stores -1) are dropped; no scored pair at all is a UserError."""
    from edgebert.data import STS_MAX_SCORE, STS_MIN_SCORE

    for needed in ("sentence1", "sentence2"):
        _column(ds, (needed,), spec, "STS sentence")
    score = _column(ds, STS_SCORE_COLUMNS, spec, "STS score")
    rows = [
        (str(a).strip(), str(b).strip(), float(s))
        for a, b, s in zip(ds["sentence1"], ds["sentence2"], ds[score])
        if s is not None and STS_MIN_SCORE <= float(s) <= STS_MAX_SCORE and str(a).strip() and str(b).strip()
    ]
    if len(rows) < 2:
        raise UserError(f"dataset '{spec}' has fewer than 2 scored sentence pairs (scores {STS_MIN_SCORE:g}..{STS_MAX_SCORE:g})")
    return rows


def sentences_from_dataset(ds: Any, spec: str) -> list[str]:
    """Every non-blank sentence of a dataset's text columns (sentence / text, or both of a pair), deduplicated."""
    columns = [c for c in SENTENCE_COLUMNS if c in ds.column_names]
    if not columns:
        columns = [c for c, f in ds.features.items() if getattr(f, "dtype", None) == "string"][:2]
    if not columns:
        raise UserError(f"dataset '{spec}' has no text column (columns: {', '.join(ds.column_names)})")
    sentences = distinct_sentences(text for column in columns for text in ds[column] if isinstance(text, str))
    if not sentences:
        raise UserError(f"dataset '{spec}' has no text")
    return sentences


def rows_jsonl_text(ds: Any, spec: str) -> str:
    """A dataset's rows as JSON Lines, every column under its own name (labelled pairs for `edgebert finetune`)."""
    import json

    if not len(ds):
        raise UserError(f"dataset '{spec}' has no rows")
    return "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in ds)


def sts_csv_text(rows: list[tuple[str, str, float]]) -> str:
    """STS rows as the headerless sentence1,sentence2,score csv that `edgebert.data.load_sts_csv` reads."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows((a, b, f"{s:g}") for a, b, s in rows)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------------ inputs


@dataclass
class Input:
    """One data input: a local path, or a dataset converted in memory (`text`) and written by `materialize`."""

    flag: str
    value: str
    path: Path | None = None
    dataset: DatasetSpec | None = None
    text: str | None = field(default=None, repr=False)
    suffix: str = ".txt"

    def describe(self) -> str:
        return str(self.path) if self.path is not None else f"{self.value} (Hugging Face dataset)"

    def materialize(self, directory: Path) -> Path:
        """The file a stage reads: the local path, or the converted dataset written into `directory` (once)."""
        if self.path is not None:
            return self.path
        assert self.dataset is not None and self.text is not None
        out = directory / f"{self.dataset.slug}{self.suffix}"
        if not out.exists() or out.read_text(encoding="utf-8") != self.text:
            directory.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(self.text, encoding="utf-8")
            tmp.replace(out)
        return out


def resolve_input(flag: str, value: str, base: Path, kind: str) -> Input:
    """An input value (path relative to `base`, or dataset spec) checked and, for a dataset, loaded and converted.

    `kind` is "sts" (scored pairs), "labelled" (sentence<TAB>label tsv), "rows" (labelled pairs for finetune, a
    dataset's rows as JSON Lines) or "text" (sentences). Missing files and unloadable datasets are UserErrors."""
    if not isinstance(value, str) or not value:
        raise UserError(f"{flag} must be a path or a dataset spec, got {value!r}")
    path = Path(value).expanduser()
    path = path if path.is_absolute() else (base / path)
    if is_dataset_spec(value) and not path.exists():
        spec = parse_dataset_spec(value, flag)
        from edgebert.data import load_hf_dataset

        hints = {"sts": "pass a local STS-B csv (sentence1,sentence2,score)", "labelled": "pass a local TSV (sentence<TAB>label)",
                 "rows": "pass a local csv, tsv or jsonl file of labelled pairs"}
        ds = load_hf_dataset(spec.name, spec.config, spec.split, spec.spec, hints.get(kind, "pass a local text file"))
        if kind == "labelled":
            from edgebert.data import labelled_from_dataset, labelled_tsv_text

            return Input(flag, value, dataset=spec, text=labelled_tsv_text(labelled_from_dataset(ds, spec.spec)), suffix=".tsv")
        if kind == "sts":
            return Input(flag, value, dataset=spec, text=sts_csv_text(sts_rows_from_dataset(ds, spec.spec)), suffix=".csv")
        if kind == "rows":
            return Input(flag, value, dataset=spec, text=rows_jsonl_text(ds, spec.spec), suffix=".jsonl")
        return Input(flag, value, dataset=spec, text="\n".join(sentences_from_dataset(ds, spec.spec)) + "\n")
    path = path.resolve()
    if not path.exists():
        what = {"sts": "an STS-B csv (sentence1,sentence2,score)", "labelled": "a TSV with a header sentence<TAB>label",
                "rows": "a csv, tsv or jsonl file of labelled pairs"}.get(
            kind, "text files (.gz ok), dirs, an STS-B csv or an SST-2 tsv"
        )
        raise UserError(f"{flag} {path} does not exist; pass {what}, or a dataset spec ({SPEC_FORMS})")
    return Input(flag, value, path=path)
