"""`edgebert finetune`: a sentence embedder trained on labelled pairs, the best epoch or soup on held-out rows kept."""

from __future__ import annotations

import argparse

from edgebert.config import FinetuneConfig
from edgebert.options import add_options, from_args


class FinetuneCommand:
    """`edgebert finetune`: supervised training of a sentence embedder on the user's labelled pairs."""

    name = "finetune"
    help = "train a sentence embedder on labelled pairs (cosent, angle, mnrl); keep the epoch or soup best on held-out rows"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        required = parser.add_argument_group("required")
        required.add_argument("--model", required=True, help="a sentence embedder: model dir with a sentence-transformers stack, hub id, or 'default'")
        required.add_argument("--data", required=True, metavar="FILE", help="labelled pairs: .csv or .tsv with a header row, or .jsonl (.gz ok)")
        required.add_argument("--out", required=True, help="output model directory")
        add_options(parser, FinetuneConfig)

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.finetune import finetune

        report = finetune(args.model, args.data, args.out, **from_args(FinetuneConfig, args))
        block = report.manifest["finetune"]
        print(f"model: {report.out_dir}")
        held = report.metrics["held_out"]
        if held is not None:
            scores = " | ".join(f"{c['name']} {_shown(c['score'])}" for c in block["candidates"])
            print(f"held-out {held['metric']} ({held['rows']} rows): {scores}")
        print(f"kept: {block['kept']['name']} ({block['loss']}, {len(block['runs'])} seed(s), {report.metrics['wall_time_s']} s)")
        return 0


def _shown(score: float | None) -> str:
    return "–" if score is None else f"{score:.4f}"
