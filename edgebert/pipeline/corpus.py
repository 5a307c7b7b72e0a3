"""Corpus preparation: STS-B csv / SST-2 tsv sentences into plain text files that `edgebert.data` reads.

`edgebert.data.load_corpus` reads the sentences of a csv/tsv table itself, but a work dir of plain text files keeps
what the run trained on in one place: the pipeline extracts the sentences (deduplicated, in file order) into
`<work>/corpus/<name>.txt`, rewritten only when the content changes (the corpus fingerprint, and so
`distill --resume`, stay stable).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Collection
from pathlib import Path

from edgebert.data import distinct_sentences, evenly_spaced, is_sentence_table, table_sentences
from edgebert.errors import UserError


def _write_if_changed(path: Path, lines: list[str]) -> Path:
    """`lines`, one per line, into `path` (`_write_text_if_changed`)."""
    return _write_text_if_changed(path, "\n".join(lines) + "\n")


def _write_text_if_changed(path: Path, body: str) -> Path:
    """`body` into `path`, atomically, only when it differs from what is there."""
    if not path.exists() or path.read_text(encoding="utf-8") != body:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(body, encoding="utf-8")
        tmp.replace(path)
    return path


def prepare_corpus(sources: list[Path], corpus_dir: Path, exclude: set[str] | None = None, sentence_lists: Collection[Path] = ()) -> list[Path]:
    """The corpus as `distill()` takes it: text files/dirs unchanged, csv/tsv and `sentence_lists` (a dataset's
    sentences, one per line, as `Input.materialize` writes them) turned into text files without the sentences in
    `exclude` (whitespace-normalised: the bench's labelled sentences and the checkpoint-choosing STS pairs, never
    distilled on)."""
    prepared: list[Path] = []
    for source in sources:
        if not source.exists():
            raise UserError(f"corpus {source} does not exist; pass --corpus with text files (.gz ok), dirs, STS csv or SST tsv")
        if is_sentence_table(source) or source in sentence_lists:
            prepared.append(_kept_sentences(source, corpus_dir, exclude or set()))
        else:
            prepared.append(source)
    return prepared


def _kept_sentences(source: Path, corpus_dir: Path, exclude: set[str]) -> Path:
    """`<corpus_dir>/<parent>-<stem>.txt`: the sentences of a table or sentence list not in `exclude`."""
    found = table_sentences(source) if is_sentence_table(source) else distinct_sentences(source.read_text(encoding="utf-8").splitlines())
    sentences = [s for s in found if s not in exclude]
    if not sentences:
        raise UserError(f"corpus {source} holds only held-out sentences (the bench's labelled set, the --eval-sts pairs); pass other text")
    return _write_if_changed(corpus_dir / f"{source.parent.name}-{source.stem}.txt", sentences)


def checkpoint_rows(source: Path, limit: int) -> list[list[str]]:
    """The `limit` rows of an STS csv that choose checkpoints, spread evenly over it. Not the first `limit`: STS-B is
    ordered by genre, so its first 1,000 train pairs are all video captions, and holding them out of the corpus (as
    the pipeline does) would leave the student without that genre's text and vocabulary."""
    with open(source, newline="", encoding="utf-8") as fh:
        return evenly_spaced([r for r in csv.reader(fh) if len(r) >= 3], limit)


def write_sts_subset(source: Path, limit: int | None, out: Path) -> Path:
    """The checkpoint rows of an STS csv (`checkpoint_rows`; all when `limit` is None) as a csv in the work dir."""
    if not source.is_file():
        raise UserError(f"distill.eval_sts {source} does not exist; pass an STS-B csv (sentence1,sentence2,score)")
    if limit is None:
        return source
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(checkpoint_rows(source, limit))
    return _write_text_if_changed(out, buf.getvalue())


def write_sample(source: Path, n: int | None, out: Path, sentences: bool, seed: int = 0) -> Path:
    """At most `n` of `source`'s distinct texts (its sentences with `sentences`, as distill reads them), a seeded
    sample kept in file order, one per line, into `out`; every text when `n` is None or covers them."""
    from edgebert.data import load_corpus

    texts = list(dict.fromkeys(" ".join(t.split()) for t in load_corpus([str(source)], sentences=sentences)))
    if n is not None and n < len(texts):
        keep = sorted(random.Random(seed).sample(range(len(texts)), n))
        texts = [texts[i] for i in keep]
    return _write_if_changed(out, [t for t in texts if t])


def write_calibration(corpus: list[Path], n: int, out: Path, seed: int = 0) -> Path:
    """`n` passages sampled (seeded) from the prepared corpus, one per line, for compress's importance ranking."""
    from edgebert.data import load_corpus

    texts = load_corpus([str(p) for p in corpus])
    rng = random.Random(seed)
    picked = rng.sample(texts, min(n, len(texts)))
    return _write_if_changed(out, [" ".join(t.split()) for t in picked])


def write_augmented(model_dir: Path, files: list[Path], out: Path, variants: int, p: float, k: int, seed: int) -> Path:
    """Word-replacement variants (`edgebert.distill.augment`) of the sentences in `files`, one per line, into `out`
    (rewritten only when they change, so the corpus fingerprint and the teacher cache's key stay stable)."""
    from edgebert.distill.augment import augment_sentences

    sentences = [line for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    variants_text = augment_sentences(model_dir, sentences, variants, p, k, seed)
    if not variants_text:
        raise UserError(f"distill.augment: no sentence of {', '.join(f.name for f in files)} has a word with neighbours to swap; set augment = 0")
    return _write_if_changed(out, variants_text)
