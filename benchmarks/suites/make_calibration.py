#!/usr/bin/env python
"""Write a small plain-text calibration file (one passage per line): a seeded random sample of a corpus's lines.

    .venv/bin/python benchmarks/suites/make_calibration.py ../shared/data/corpus/sotu.txt.gz WORK/calibration.txt --passages 320

`edgebert compress --calibration FILE --calibration-samples N` ranks units on the first N passages of FILE and keeps the
next 64 as held-out text for its fidelity check, so N + 64 passages are written for N = 256 (the default 320).
The sample is in random (seeded) order, so the ranking passages and the held-out ones both span the whole corpus;
the same corpus, count and seed always give the same file.
"""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, help="text, one passage per line (.gz ok)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--passages", type=int, default=320)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    opener = gzip.open if args.corpus.suffix == ".gz" else open
    with opener(args.corpus, "rt", encoding="utf-8", errors="replace") as fh:
        lines = [line.strip() for line in fh if line.strip()]
    if len(lines) < args.passages:
        parser.error(f"{args.corpus} has {len(lines)} passages, fewer than --passages {args.passages}")
    sample = [lines[i] for i in random.Random(args.seed).sample(range(len(lines)), args.passages)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(sample) + "\n", encoding="utf-8")
    print(f"wrote {len(sample)} passages of {len(lines)} from {args.corpus} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
