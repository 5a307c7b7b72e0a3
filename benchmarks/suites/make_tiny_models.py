#!/usr/bin/env python
"""Tiny random models of a family, one per task head, for the family table (`family_table.sh`).

    .venv/bin/python benchmarks/suites/make_tiny_models.py OUT_DIR [--family albert] [--heads fill-mask ...]

Written by the test suite's offline builders (`tests/model_zoo.py`: hidden 32, 2 layers, ALBERT layer-shared as
published with embedding_size 16 and a Unigram tokenizer), one directory per head: OUT_DIR/<family>-<head>.
Random weights: their rows in a table measure an export's fidelity to its own model (agreement, parity), not a
task's quality. Used where no real weights of a family or head are available offline (a shared ALBERT).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

HEADS = ("fill-mask", "sequence-classification", "token-classification")


def main(argv: list[str] | None = None) -> int:
    from model_zoo import BUILDERS, build_xlnet

    builders = {**BUILDERS, "xlnet": build_xlnet}  # XLNet has no masked-LM class: its heads are the classifiers
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("out", type=Path)
    parser.add_argument("--family", choices=sorted(builders), default="albert")
    parser.add_argument("--heads", nargs="+", choices=HEADS, default=list(HEADS))
    args = parser.parse_args(argv)
    for n, head in enumerate(args.heads):
        directory = args.out / f"{args.family}-{head}"
        if directory.exists():
            print(f"{directory} exists, kept")
            continue
        labels = {0: "NEGATIVE", 1: "POSITIVE"} if head == "sequence-classification" else None
        builders[args.family](directory, head=head, num_labels=2 if labels else 3, id2label=labels, seed=11 + n)
        print(f"{directory}: tiny random {args.family} with a {head} head")
    return 0


if __name__ == "__main__":
    sys.exit(main())
