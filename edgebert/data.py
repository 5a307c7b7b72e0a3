"""Corpora for distillation (text files, .gz, directories, HF datasets), the MLM collator and eval sets (STS pairs,
labelled sentences for classifiers).

A corpus is read into a list of passages (one per non-blank line), tokenised once, then either truncated
(one passage per sequence) or packed (passages concatenated with [SEP] and cut into full sequences).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert import validate
from edgebert.config import MASKED_SHARE, PACKINGS, SENTENCE_MIN_CHARS
from edgebert.errors import UserError

TEXT_SUFFIXES = (".txt", ".txt.gz", ".text", ".text.gz")
_DATASET_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?(:[\w.-]+)?$")
GLUE_REPO = "nyu-mll/glue"
DATASET_PREFIXES = ("glue/", "hf:")
SPEC_FORMS = "glue/TASK:SPLIT (e.g. glue/stsb:train), hf:NAME:SPLIT or hf:NAME:CONFIG:SPLIT"
LABELLED_TEXT_COLUMNS = ("sentence", "text")


# --------------------------------------------------------------------------------------------- dataset specs


@dataclass(frozen=True)
class DatasetSpec:
    """A public dataset named on the command line or in a recipe: `load_dataset(name, config, split=split)`."""

    spec: str
    name: str
    config: str | None
    split: str

    @property
    def slug(self) -> str:
        """A file-name-safe form of the spec, for the converted file in the work dir."""
        return re.sub(r"[^\w.-]+", "-", self.spec.removeprefix("hf:")).strip("-")


def is_dataset_spec(value: str) -> bool:
    """Whether an input value names a dataset (glue/… or hf:…) rather than a file."""
    return value.startswith(DATASET_PREFIXES)


def parse_dataset_spec(value: str, flag: str) -> DatasetSpec:
    """`glue/TASK:SPLIT` or `hf:NAME[:CONFIG]:SPLIT` into its parts; UserError naming `flag` when malformed."""
    if value.startswith("glue/"):
        task, sep, split = value.removeprefix("glue/").partition(":")
        if task and sep and split and ":" not in split:
            return DatasetSpec(value, GLUE_REPO, task, split)
    else:
        parts = value.removeprefix("hf:").split(":")
        if len(parts) in (2, 3) and all(parts):
            return DatasetSpec(value, parts[0], parts[1] if len(parts) == 3 else None, parts[-1])
    raise UserError(f"{flag} {value} is not a dataset spec; use {SPEC_FORMS}, or pass a file")


# --------------------------------------------------------------------------------------------- corpora


def _read_lines(path: Path) -> list[str]:
    check_corpus_file(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            return [line.strip() for line in fh if line.strip()]
    except UnicodeDecodeError as exc:
        raise validate.not_utf8("corpus file", path, exc) from exc
    except (OSError, EOFError) as exc:
        raise UserError(f"cannot read corpus file {path} ({type(exc).__name__}: {exc})") from exc


def check_corpus_file(path: Path) -> Path:
    """A corpus or calibration text file checked before use: readable UTF-8 text (UserError naming it)."""
    return validate.text_file("corpus file", path)


def check_corpus_sources(sources: Sequence[str | Path]) -> None:
    """Every local file of a corpus list (files, dirs' text files, csv/tsv tables) is readable UTF-8 text; dataset
    names and missing paths are left to `load_corpus`. For callers that must refuse bad text before writing."""
    for source in sources:
        path = Path(str(source)).expanduser()
        files = [path] if path.is_file() else _corpus_files(path) if path.is_dir() else []
        for f in files:
            check_corpus_file(f)


def _corpus_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and p.name.lower().endswith(TEXT_SUFFIXES))


def _looks_like_path(spec: str) -> bool:
    return spec.startswith((".", "/", "~")) or spec.lower().endswith(TEXT_SUFFIXES + (".gz",)) or "\\" in spec


def load_dataset_texts(spec: str, split: str = "train", column: str = "text") -> list[str]:
    """Passages from a Hugging Face dataset `name[:config]` (its `text` column, or the first string column)."""
    name, _, config = spec.partition(":")
    ds = load_hf_dataset(name, config or None, split, spec, "pass a local text file or directory")
    columns = [c for c, f in ds.features.items() if getattr(f, "dtype", None) == "string"]
    if column not in ds.column_names:
        if not columns:
            raise UserError(f"dataset '{spec}' has no text column (columns: {', '.join(ds.column_names)})")
        column = columns[0]
    return [t.strip() for t in ds[column] if isinstance(t, str) and t.strip()]


def load_hf_dataset(name: str, config: str | None, split: str, spec: str, hint: str) -> Any:
    """`datasets.load_dataset(name, config, split=split)`; when the Hub is offline or unreachable, the datasets cache
    only (no retries), and any failure is one UserError naming `spec` and ending with `hint` (what to pass instead)."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - the distill extra installs it
        raise UserError(f"'{spec}' is a dataset name but `datasets` is not installed: pip install 'edgebert[distill]'") from exc
    from edgebert.sources import hub_offline

    offline = hub_offline()
    try:
        with _datasets_offline(offline):  # offline: the datasets cache only, no retries against an unreachable Hub
            return datasets.load_dataset(name, config, split=split)
    except Exception as exc:
        where = "the datasets cache (the Hugging Face Hub is offline or unreachable)" if offline else "the Hugging Face Hub"
        raise UserError(f"could not load dataset '{spec}' from {where} ({type(exc).__name__}); check the name and your network, or {hint}") from exc


@contextlib.contextmanager
def _datasets_offline(offline: bool) -> Iterator[None]:
    """datasets' and huggingface_hub's offline mode for the duration (read at their import, so set in place)."""
    if not offline:
        yield
        return
    import datasets
    import huggingface_hub.constants as hub_constants

    saved = datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = hub_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE = saved


def load_corpus(sources: str | Path | Sequence[str | Path], sentences: bool = False) -> list[str]:
    """Passages (one per non-blank line) from text files (.gz fine), directories of them, or dataset names; the
    sentences of an STS-B csv / SST-2 tsv table (`table_sentences`). `sentences`: passages other than the tables'
    are split into sentences (`split_sentences`), in order."""
    if isinstance(sources, (str, Path)):
        sources = [sources]
    if not sources:
        raise UserError("no corpus given; pass --corpus with a text file, a directory or a dataset name")
    texts: list[str] = []
    for source in sources:
        spec = str(source)
        path = Path(spec).expanduser()
        if is_sentence_table(path):
            found = table_sentences(path)
        elif path.is_file():
            found = _read_lines(path)
        elif path.is_dir():
            files = _corpus_files(path)
            if not files:
                raise UserError(f"corpus directory {path} holds no text files ({', '.join(TEXT_SUFFIXES)})")
            found = [line for f in files for line in _read_lines(f)]
        elif _looks_like_path(spec) or not _DATASET_NAME.match(spec):
            raise UserError(f"corpus {path} does not exist; pass a text file, a directory or a dataset name")
        else:
            found = load_dataset_texts(spec)
        if not found:
            raise UserError(f"corpus {spec} is empty (no non-blank lines)")
        if sentences and not is_sentence_table(path):
            found = [sentence for passage in found for sentence in split_sentences(passage)]
        texts.extend(found)
    return texts


# A sentence ends at . ! or ? (closing quotes/brackets may follow), then space, then what can start a sentence.
_SENTENCE_END = re.compile(r"""[.!?]["'”’)\]]*(?=\s+["'“‘(\[]?[A-Z0-9])""")
# Words whose trailing period is not a sentence end: titles and common abbreviations, single capitals (U.S., J.)
_ABBREVIATION = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Gen|Col|Gov|Sen|Rep|Hon|Rev|vs|etc|No|Nos|Art|Sec|Vol|pp|Jan|Feb|Mar|Apr|Aug|Sept|Sep|Oct|Nov|Dec|Inc|Co|Corp|Ltd)|\b[A-Z]|\b(?:[A-Za-z]\.)+[A-Za-z])\.$")


def split_sentences(passage: str, min_chars: int = SENTENCE_MIN_CHARS) -> list[str]:
    """The sentences of `passage`: cut after . ! ? followed by a capital or digit, not after a known abbreviation or
    an initial; a piece shorter than `min_chars` is joined to the next (or, at the end, the previous) sentence."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(passage):
        piece = passage[start : match.end()]
        if _ABBREVIATION.search(piece.rstrip("\"'”’)]")):
            continue
        pieces.append(piece.strip())
        start = match.end()
    pieces.append(passage[start:].strip())
    out: list[str] = []
    carry = ""
    for piece in (p for p in pieces if p):
        piece = f"{carry} {piece}" if carry else piece
        carry = piece if len(piece) < min_chars else ""
        if not carry:
            out.append(piece)
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


def corpus_fingerprint(sources: str | Path | Sequence[str | Path]) -> str:
    """A short content hash of the corpus files (dataset names hash by name), for cache keys and lineage."""
    if isinstance(sources, (str, Path)):
        sources = [sources]
    h = hashlib.sha256()
    for source in sources:
        path = Path(str(source)).expanduser()
        files = [path] if path.is_file() else _corpus_files(path) if path.is_dir() else []
        if not files:
            h.update(f"dataset:{source}".encode())
        for f in files:
            h.update(f.name.encode())
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------- tokenising


class TokenizedCorpus:
    """Token-id sequences (lists of ints), each wrapped in the tokenizer's special tokens, ready for the MLM collator;
    with their token types when the tokenizer's template gives a special token a segment of its own (XLNet's <cls>)."""

    def __init__(self, sequences: list[list[int]], special_masks: list[list[int]], token_types: list[list[int]] | None = None) -> None:
        self.sequences = sequences
        self.special_masks = special_masks
        self.token_types = token_types

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        item = {"input_ids": self.sequences[index], "special_tokens_mask": self.special_masks[index]}
        if self.token_types is not None:
            item["token_type_ids"] = self.token_types[index]
        return item

    @property
    def num_tokens(self) -> int:
        return sum(len(s) for s in self.sequences)


def special_template(tokenizer: Any) -> tuple[list[int], list[int], list[int], list[int]]:
    """The tokenizer's special tokens around one text, read from the tokenizer itself: (prefix ids, suffix ids, prefix
    types, suffix types); [CLS] … [SEP] for BERT, <s> … </s> for RoBERTa, … <sep> <cls> for XLNet."""
    probe = "a"
    body = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True, return_token_type_ids=True)
    ids, types = list(full["input_ids"]), list(full.get("token_type_ids") or [0] * len(full["input_ids"]))
    for start in range(len(ids) - len(body) + 1):
        if body and ids[start : start + len(body)] == body:
            end = start + len(body)
            return ids[:start], ids[end:], types[:start], types[end:]
    return [tokenizer.cls_token_id], [tokenizer.sep_token_id], [0], [0]  # a template that rewrites the text: BERT's


def tokenize_corpus(texts: Sequence[str], tokenizer: Any, seq_len: int, packing: str = "truncate") -> TokenizedCorpus:
    """Tokenise `texts` once; `truncate`: one passage per sequence; `pack`: fill every sequence to `seq_len`. Each
    sequence is wrapped in the tokenizer's own special tokens (`special_template`)."""
    if packing not in PACKINGS:
        raise UserError(f"--packing {packing} is unknown; choose one of: {', '.join(PACKINGS)}")
    if seq_len < 8:
        raise UserError(f"--seq-len must be at least 8 tokens, got {seq_len}")
    prefix, suffix, prefix_types, suffix_types = special_template(tokenizer)
    sep = tokenizer.sep_token_id
    body = seq_len - len(prefix) - len(suffix)
    encoded = tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    chunks: list[list[int]] = []
    if packing == "truncate":
        chunks = [ids[:body] for ids in encoded if ids]
    else:
        stream: list[int] = []
        for ids in encoded:
            if ids:
                stream.extend(ids)
                stream.append(sep)
        for start in range(0, len(stream), body):
            chunk = stream[start : start + body]
            if chunk and chunk[-1] == sep:
                chunk = chunk[:-1]
            if len(chunk) >= 4:
                chunks.append(chunk)
    if not chunks:
        raise UserError("the corpus produced no tokens; check its encoding and content")
    sequences = [[*prefix, *chunk, *suffix] for chunk in chunks]
    masks = [[1] * len(prefix) + [1 if packing == "pack" and t == sep else 0 for t in chunk] + [1] * len(suffix) for chunk in chunks]
    types = None
    if any(prefix_types + suffix_types):  # a special token in a segment of its own: the model must see it
        types = [prefix_types + [0] * len(chunk) + suffix_types for chunk in chunks]
    return TokenizedCorpus(sequences, masks, types)


def padding_collator(tokenizer: Any, pad_to_multiple_of: int | None = 8) -> Any:
    """Pads input_ids, attention_mask and special_tokens_mask; the distillation trainer masks the batch itself."""
    from transformers import DataCollatorWithPadding

    return DataCollatorWithPadding(tokenizer=tokenizer, pad_to_multiple_of=pad_to_multiple_of, return_tensors="pt")


def mlm_collator(tokenizer: Any, mlm_probability: float = MASKED_SHARE, pad_to_multiple_of: int | None = 8, seed: int | None = None) -> Any:
    """Dynamic masking (new masks every time a batch is drawn): 15 % of tokens, 80/10/10 mask/random/keep.

    With `seed`, masks come from the collator's own generator instead of torch's global RNG (the
    distillation trainer re-seeds it per step so that --resume draws the masks an uninterrupted run draws).
    """
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(
        tokenizer=tokenizer,
        mlm=True,
        mlm_probability=mlm_probability,
        mask_replace_prob=0.8,
        random_replace_prob=0.1,
        pad_to_multiple_of=pad_to_multiple_of,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------- eval sets


STS_MIN_SCORE, STS_MAX_SCORE = 0.0, 5.0  # the STS-B similarity scale


@dataclass
class STSPairs:
    """Sentence pairs with gold similarity scores (STS-B: 0–5)."""

    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]

    def __len__(self) -> int:
        return len(self.scores)


def load_sts_csv(path: str | Path, limit: int | None = None) -> STSPairs:
    """An STS-B style CSV without header: sentence1, sentence2, score."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"STS file {path} does not exist; pass a CSV of sentence1,sentence2,score")
    validate.text_file("STS file", path)
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            for lineno, row in enumerate(csv.reader(fh), start=1):
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) < 3:
                    raise UserError(f"{path}:{lineno}: expected sentence1,sentence2,score, got {len(row)} fields")
                try:
                    score = float(row[2])
                except ValueError as exc:
                    if lineno == 1:  # tolerate a header row
                        continue
                    raise UserError(f"{path}:{lineno}: score '{row[2]}' is not a number") from exc
                if not STS_MIN_SCORE <= score <= STS_MAX_SCORE:  # NaN fails this too
                    raise UserError(
                        f"{path}:{lineno}: score {row[2].strip()!r} is outside the STS-B scale "
                        f"{STS_MIN_SCORE:g}..{STS_MAX_SCORE:g}; fix that line"
                    )
                s1.append(row[0])
                s2.append(row[1])
                scores.append(score)
                if limit is not None and len(scores) >= limit:
                    break
    except UnicodeDecodeError as exc:
        raise validate.not_utf8("STS file", path, exc) from exc
    except csv.Error as exc:
        raise UserError(f"STS file {path} is not a readable CSV ({exc}); pass sentence1,sentence2,score rows") from exc
    if len(scores) < 2:
        raise UserError(f"STS file {path} has fewer than 2 scored pairs")
    return STSPairs(s1, s2, scores)


def iter_batches(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


TABLE_SUFFIXES = (".csv", ".tsv")


def is_sentence_table(path: Path) -> bool:
    """An STS csv or an SST tsv file (its sentences are read by `table_sentences`), not running text."""
    return path.is_file() and path.suffix.lower() in TABLE_SUFFIXES


def evenly_spaced(items: Sequence[Any], limit: int) -> list[Any]:
    """At most `limit` of `items`, spread over the whole sequence in order, the first included (deterministic)."""
    if len(items) <= limit:
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def distinct_sentences(texts: Iterable[str]) -> list[str]:
    """`texts` whitespace-normalised, blanks dropped, each once, in first-seen order."""
    return list(dict.fromkeys(n for n in (" ".join(t.split()) for t in texts) if n))


def table_sentences(path: Path) -> list[str]:
    """Sentences of an STS-B csv (sentence1, sentence2, score) or an SST-2 tsv (sentence, label; header ok)."""
    sentences: list[str] = []
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            if path.suffix.lower() == ".csv":
                for row in csv.reader(fh):
                    if len(row) >= 3:
                        sentences.extend(row[:2])
            else:
                for n, row in enumerate(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)):
                    if n == 0 and row and row[0].strip().lower() in ("sentence", "text"):
                        continue
                    if row:
                        sentences.append(row[0])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"cannot read corpus table {path} ({type(exc).__name__}: {exc})") from exc
    out = distinct_sentences(sentences)
    if not out:
        raise UserError(f"corpus table {path} has no sentences (expected an STS-B csv or an SST-2 tsv)")
    return out


# --------------------------------------------------------------------------------------------- labelled sentences


@dataclass
class LabelledSet:
    """Sentences with their gold labels as written (ids such as "0"/"1", or label names such as "positive")."""

    texts: list[str]
    labels: list[str]
    source: str

    def __len__(self) -> int:
        return len(self.labels)


def load_labelled(value: str | Path, limit: int | None = None, flag: str = "--sst2") -> LabelledSet:
    """A labelled set: a TSV with a header naming a text column (`sentence` or `text`) and `label` (GLUE SST-2's
    train/dev format), or a dataset spec such as `glue/sst2:validation` (its sentence/text and label columns).
    Rows without a gold label (GLUE's test split stores -1) are dropped; UserError (one line) on anything else."""
    text = str(value)
    path = Path(text).expanduser()
    if is_dataset_spec(text) and not path.exists():
        spec = parse_dataset_spec(text, flag)
        ds = load_hf_dataset(spec.name, spec.config, spec.split, spec.spec, "pass a local TSV (sentence<TAB>label)")
        return labelled_from_dataset(ds, spec.spec, limit)
    return load_labelled_tsv(path, limit, flag)


def load_labelled_tsv(path: Path, limit: int | None = None, flag: str = "--sst2") -> LabelledSet:
    """A TSV with a header: a `sentence` (or `text`) column and a `label` column."""
    if not path.is_file():
        raise UserError(f"{flag} {path} does not exist; pass a TSV with a header 'sentence<TAB>label' (SST-2 format)")
    validate.text_file(f"{flag} file", path)
    texts: list[str] = []
    labels: list[str] = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = [h.strip().lower() for h in next(reader, [])]
        text_col = next((header.index(c) for c in LABELLED_TEXT_COLUMNS if c in header), None)
        if text_col is None or "label" not in header:
            raise UserError(f"{flag} {path}: expected a header with 'sentence' (or 'text') and 'label', got {header}")
        label_col = header.index("label")
        for row in reader:
            if len(row) <= max(text_col, label_col) or not row[text_col].strip() or row[label_col].strip() in ("", "-1"):
                continue
            texts.append(row[text_col].strip())
            labels.append(row[label_col].strip())
            if limit is not None and len(labels) >= limit:
                break
    if not labels:
        raise UserError(f"{flag} {path} has no labelled rows")
    return LabelledSet(texts, labels, str(path))


def labelled_from_dataset(ds: Any, spec: str, limit: int | None = None) -> LabelledSet:
    """The labelled rows of a loaded dataset (text column `sentence` or `text`, column `label`; class names from
    its ClassLabel feature when it has one)."""
    column = next((c for c in LABELLED_TEXT_COLUMNS if c in ds.column_names), None)
    if column is None or "label" not in ds.column_names:
        raise UserError(f"dataset '{spec}' needs a sentence (or text) and a label column; it has {', '.join(ds.column_names)}")
    texts: list[str] = []
    labels: list[str] = []
    for sentence, label in zip(ds[column], ds["label"]):
        if isinstance(sentence, str) and sentence.strip() and label is not None and int(label) >= 0:
            texts.append(sentence.strip())
            labels.append(str(int(label)))
            if limit is not None and len(labels) >= limit:
                break
    if not labels:
        raise UserError(f"dataset '{spec}' has no labelled rows (GLUE's test splits have none: use validation)")
    return LabelledSet(texts, labels, spec)


def labelled_tsv_text(data: LabelledSet) -> str:
    """`data` as the SST-2 style TSV `load_labelled_tsv` reads (header sentence<TAB>label)."""
    rows = ["sentence\tlabel", *(f"{' '.join(t.split())}\t{y}" for t, y in zip(data.texts, data.labels))]
    return "\n".join(rows) + "\n"


def label_ids(labels: Sequence[str], id2label: dict[Any, str] | None, where: str) -> list[int]:
    """The model's class ids of gold `labels`: a label name of the model's (case-insensitive), or an integer id.
    SST-2's 0/1 map to a two-class head by its names when they say negative/positive, whatever their order."""
    names = {int(k): str(v) for k, v in (id2label or {}).items()}
    by_name = {v.lower(): k for k, v in names.items()}
    sentiment = len(names) == 2 and all(("neg" in v.lower()) != ("pos" in v.lower()) for v in names.values())
    polarity = {str(i): next(k for k, v in names.items() if word in v.lower()) for i, word in enumerate(("neg", "pos"))} if sentiment else {}
    ids = []
    for label in labels:
        key = str(label).strip()
        if key.lower() in by_name:
            ids.append(by_name[key.lower()])
        elif key in polarity:
            ids.append(polarity[key])
        elif key.isdigit() and (not names or int(key) in names):
            ids.append(int(key))
        else:
            known = ", ".join(f"{k} {v}" for k, v in sorted(names.items()))
            raise UserError(f"{where}: label {key!r} is neither a label of the model nor one of its ids ({known})")
    return ids
