#!/usr/bin/env python
"""The text the MPNet → small-student distillation trains on, and the STS-B train pairs it chooses checkpoints on.

    benchmarks/suites/mpnet_student_data.py DATA_DIR OUT_DIR

DATA_DIR is ../shared/data (stsb/train.csv, sst2/train.tsv, corpus/sotu.txt.gz). Writes to OUT_DIR:
- `sentences.txt`: one text per line, no repeats: every sentence of STS-B *train* (both columns), 10,000 SST-2 train
  phrases of at least 4 words and 5,000 State of the Union sentences (seeded samples). Unlabelled: only the
  teacher's embeddings of them are learned. STS-B dev is never read.
- `eval-sts.csv`: 1,000 STS-B train pairs spread over the file (the checkpoint is chosen on train; the bench scores
  dev).
"""

from __future__ import annotations

import csv
import gzip
import random
import sys
from pathlib import Path

from edgebert.data import evenly_spaced, split_sentences

SST2_PHRASES, SOTU_SENTENCES, EVAL_PAIRS, SEED = 10_000, 5_000, 1_000, 0


def distinct(texts: list[str]) -> list[str]:
    """`texts` without empty lines or repeats, first occurrence kept."""
    return list(dict.fromkeys(t.strip() for t in texts if t.strip()))


def sentences(data: Path) -> list[str]:
    """STS-B train sentences, then the SST-2 and State of the Union samples."""
    rng = random.Random(SEED)
    with (data / "stsb/train.csv").open(newline="", encoding="utf-8") as fh:
        sts = distinct([s for row in csv.reader(fh) for s in row[:2]])
    with (data / "sst2/train.tsv").open(encoding="utf-8") as fh:
        sst = distinct([line.split("\t")[0] for line in fh.read().splitlines()[1:]])
    sst = [s for s in sst if len(s.split()) >= 4]
    with gzip.open(data / "corpus/sotu.txt.gz", "rt", encoding="utf-8") as fh:
        sotu = distinct([s for line in fh for s in split_sentences(line.strip())])
    rng.shuffle(sst)
    rng.shuffle(sotu)
    return distinct(sts + sst[:SST2_PHRASES] + sotu[:SOTU_SENTENCES])


def main(data: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    texts = [t.replace("\n", " ") for t in sentences(data)]
    (out / "sentences.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    with (data / "stsb/train.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    with (out / "eval-sts.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(evenly_spaced(rows, EVAL_PAIRS))
    print(f"{len(texts):,} sentences and {EVAL_PAIRS:,} STS-B train pairs written to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
