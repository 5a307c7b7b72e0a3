#!/usr/bin/env python
"""Which teacher layers a layer-dropped student should keep: STS-B Spearman of every k-layer subset, untrained.

Each subset is the teacher with only those layers (in order), mean-pooled like the teacher; scored on STS-B train
pairs (for choosing) and dev pairs (for reporting). The presets keep the best 3 on train, [0, 3, 5], which is
also what `edgebert distill --student-layers 3` picks by default (evenly spaced, first and last included).

    .venv/bin/python benchmarks/experiments/layer_subsets.py --sizes 2 3 4 > benchmarks/results/layer-subsets.txt
"""

from __future__ import annotations

import argparse
import copy
import itertools



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", default=None, help="teacher dir (default: the packaged all-MiniLM-L6-v2)")
    parser.add_argument("--train", default="../shared/data/stsb/train.csv")
    parser.add_argument("--train-limit", type=int, default=1000)
    parser.add_argument("--dev", default="../shared/data/stsb/dev.csv")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 3, 4])
    args = parser.parse_args()

    import torch

    from edgebert.data import load_sts_csv
    from edgebert.evaluate import sts_spearman
    from edgebert.modelio import load_model
    from edgebert.sources import resolve_model

    torch.set_num_threads(1)
    model = load_model(resolve_model(args.teacher))
    encoder, tokenizer = model.embedder.encoder, model.tokenizer
    layers = list(model.family.layers(encoder))
    train, dev = load_sts_csv(args.train, limit=args.train_limit), load_sts_csv(args.dev)

    def scores(module: torch.nn.Module) -> str:
        return f"{sts_spearman(module, tokenizer, train):.4f}  {sts_spearman(module, tokenizer, dev):.4f}"

    print(f"layers          STS-B train ({len(train.scores)} pairs)  dev ({len(dev.scores)} pairs)")
    print(f"all {len(layers)} (teacher)  {scores(encoder)}")
    for k in args.sizes:
        for subset in itertools.combinations(range(len(layers)), k):
            student = copy.copy(encoder)
            student.encoder = copy.copy(encoder.encoder)
            student.encoder.layer = torch.nn.ModuleList([layers[i] for i in subset])
            print(f"{list(subset)!s:15} {scores(student)}", flush=True)


if __name__ == "__main__":
    main()
