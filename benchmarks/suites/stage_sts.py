#!/usr/bin/env python
"""STS-B Spearman of model dirs on the checkpoint-choice pairs (a train split) and on dev, side by side: the
per-stage table of a distil / prune / distil run. sentence-transformers loads each dir (its own pooling
and normalisation), PyTorch fp32, so the numbers do not depend on edgebert's code.

    .venv/bin/python benchmarks/suites/stage_sts.py --train TRAIN.csv --dev DEV.csv [--train-limit 1000] [--first] LABEL=DIR ...

The first LABEL=DIR is the reference (the teacher) for the retention columns. Choose on train, report dev.
--train-limit pairs are spread over the train file, as the pipeline's `eval_sts_limit` takes them (STS-B is ordered
by genre); `--first` takes the first N instead (the file's first N pairs, all from its first genre).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


import numpy as np
from scipy.stats import spearmanr


def read_pairs(path: str, limit: int | None, first: bool = False) -> tuple[list[str], list[str], np.ndarray]:
    """All pairs (`limit` None), the first `limit`, or the `limit` pairs the pipeline chooses checkpoints on."""
    from edgebert.pipeline.corpus import checkpoint_rows

    if limit is not None and not first:
        rows = checkpoint_rows(Path(path), limit)
    else:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.reader(fh) if len(r) >= 3][:limit]
    return [r[0] for r in rows], [r[1] for r in rows], np.array([float(r[2]) for r in rows])


def score(model, pairs: tuple[list[str], list[str], np.ndarray]) -> float:
    a = model.encode(pairs[0], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    b = model.encode(pairs[1], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    return float(spearmanr((a * b).sum(1), pairs[2]).correlation)


def heads_and_ffn(model) -> tuple[int, int]:
    config = model[0].auto_model.config
    heads = config.num_hidden_layers * config.num_attention_heads - sum(len(v) for v in (config.pruned_heads or {}).values())
    return heads, int(config.intermediate_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--train-limit", type=int, default=1000)
    parser.add_argument("--first", action="store_true", help="the first --train-limit pairs, not spread over the file")
    parser.add_argument("models", nargs="+", metavar="LABEL=DIR")
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    train, dev = read_pairs(args.train, args.train_limit, args.first), read_pairs(args.dev, None)
    rows, ref = [], None
    for spec in args.models:
        label, path = spec.split("=", 1)
        model = SentenceTransformer(path, device="cpu", trust_remote_code=False)
        params = sum(p.numel() for p in model.parameters()) / 1e6
        row = (label, params, *heads_and_ffn(model), score(model, train), score(model, dev))
        ref = ref or row
        rows.append(row)
    subset = f"first {args.train_limit}" if args.first else f"{args.train_limit} spread"
    print(f"| model | params M | heads | FFN | train ρ ({subset}) | of ref | dev ρ | of ref |")
    print("|---|---|---|---|---|---|---|---|")
    for label, params, heads, ffn, tr, dv in rows:
        print(f"| {label} | {params:.1f} | {heads} | {ffn} | {tr:.4f} | {tr / ref[4]:.1%} | {dv:.4f} | {dv / ref[5]:.1%} |")


if __name__ == "__main__":
    main()
