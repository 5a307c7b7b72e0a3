"""`edgebert compress`: structured pruning of attention heads and FFN neurons into a smaller model directory."""

from __future__ import annotations

import argparse


class CompressCommand:
    """`edgebert compress`: remove the least important heads and FFN neurons, physically shrinking the weights."""

    name = "compress"
    help = "prune attention heads and FFN neurons (ranked on calibration text) into a smaller model directory"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        required = parser.add_argument_group("required")
        required.add_argument("--out", required=True, help="output model directory")
        what = parser.add_argument_group("what to prune")
        what.add_argument("--prune-heads", type=float, default=0.0, metavar="F", help="share of attention heads to remove, in [0, 1)")
        what.add_argument(
            "--heads-to-prune",
            default=None,
            metavar="JSON",
            help='explicit heads instead of --prune-heads: JSON or a .json file, e.g. \'{"0": [1, 2]}\' (no calibration needed)',
        )
        what.add_argument(
            "--head-scope",
            default="global",
            choices=("global", "layer"),
            help="global: rank heads across layers (layer-normalised, every layer keeps >= 1); layer: the fraction per layer",
        )
        what.add_argument(
            "--prune-ffn",
            type=float,
            default=0.0,
            metavar="F",
            help="share of FFN neurons to remove from every layer (each keeps its own best), in [0, 1)",
        )
        what.add_argument(
            "--ffn-scope",
            default="layer",
            help="only 'layer': a global FFN cut would give layers different widths, which stock classes cannot load",
        )
        optional = parser.add_argument_group("optional")
        optional.add_argument("--model", default=None, help="model dir, hub id, or 'default' (all-MiniLM-L6-v2)")
        optional.add_argument(
            "--calibration", default=None, metavar="FILE", help="text, one passage per line (.gz ok); required by --prune-heads/--prune-ffn"
        )
        optional.add_argument("--calibration-samples", type=int, default=256, metavar="N", help="passages used to rank units")
        optional.add_argument(
            "--importance",
            default="auto",
            choices=("auto", "mlm", "output-sensitivity"),
            help="loss for the gradient scores: the model's own masked-LM head (auto when present) or output sensitivity",
        )
        optional.add_argument("--seq-len", type=int, default=128, help="token length of calibration passages")
        optional.add_argument("--batch-size", type=int, default=16)
        optional.add_argument("--seed", type=int, default=0)
        optional.add_argument("--force", action="store_true", help="replace a non-empty --out")
        optional.add_argument("--quiet", action="store_true", help="no progress messages")

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        import json

        from edgebert.compress.compress import compress

        report = compress(
            args.model,
            args.out,
            prune_heads=args.prune_heads,
            prune_ffn=args.prune_ffn,
            heads_to_prune=args.heads_to_prune,
            head_scope=args.head_scope,
            ffn_scope=args.ffn_scope,
            calibration=args.calibration,
            calibration_samples=args.calibration_samples,
            importance=args.importance,
            seq_len=args.seq_len,
            batch_size=args.batch_size,
            seed=args.seed,
            force=args.force,
            quiet=args.quiet,
        )
        m = report.manifest
        params = m["parameters"]
        print(
            json.dumps(
                {
                    "out": str(report.out_dir),
                    "heads_per_layer": m["pruning"]["heads_per_layer"]["after"],
                    "intermediate_size": m["pruning"]["intermediate_size"]["after"],
                    "encoder_parameters": {"before": params["before"]["encoder"], "after": params["after"]["encoder"]},
                    "cosine_to_source": m["metrics"]["cosine_to_source"],
                }
            )
        )
        return 0
