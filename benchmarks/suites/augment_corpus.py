#!/usr/bin/env python
"""Word-replacement variants of distillation text, outside a pipeline run (`edgebert.distill.augment`; in a pipeline
recipe: `[distill] augment = N`; its measurement: benchmarks/README.md, "The small preset").

    .venv/bin/python benchmarks/suites/augment_corpus.py --model TEACHER_DIR --out aug.txt [--variants 1] [--p 0.3] FILE...

FILE: one sentence per line (e.g. a pipeline work dir's corpus/*.txt, which already exclude the checkpoint and bench
pairs' sentences; augmenting the raw STS-B file would leak variants of the held-out sentences).
"""

from __future__ import annotations

import argparse
from pathlib import Path



def main() -> None:
    from edgebert.distill.augment import augment_sentences

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--variants", type=int, default=1, help="rewrites per sentence")
    ap.add_argument("--p", type=float, default=0.3, help="chance that a replaceable word is swapped")
    ap.add_argument("--k", type=int, default=8, help="neighbours a word may be swapped for")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("files", nargs="+", type=Path)
    a = ap.parse_args()
    sentences = [line for path in a.files for line in path.read_text(encoding="utf-8").splitlines()]
    out = augment_sentences(a.model, sentences, a.variants, a.p, a.k, a.seed)
    a.out.write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"{len(out)} sentences written to {a.out}")


if __name__ == "__main__":
    main()
