"""`edgebert bench`: size, latency, memory and accuracy retention of model dirs, exports and model files."""

from __future__ import annotations

import argparse
import sys

from edgebert.config import BenchConfig
from edgebert.options import add_options, from_args


class BenchCommand:
    """`edgebert bench`: size, latency, memory and accuracy retention, side by side, with a report and a plot."""

    name = "bench"
    help = "benchmark model dirs and exports: size, latency, memory, STS-B retention; writes report.{json,md,png}"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        required = parser.add_argument_group("required")
        required.add_argument(
            "items",
            nargs="+",
            metavar="ITEM",
            help="[LABEL=]PATH: a model dir (PyTorch), an export dir (onnx/tflite/tfjs), a .onnx/.tflite file, or 'default'",
        )
        required.add_argument("--out", required=True, help="report directory (report.json, report.md, report.png)")
        add_options(parser, BenchConfig)

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.api import run_bench_options

        outcome = run_bench_options(args.items, args.out, BenchConfig(**from_args(BenchConfig, args)), command=_command_line())
        from edgebert.bench.report import main_table

        print("\n".join(main_table(outcome.report)))
        print(f"\nwritten to: {outcome.out_dir}/report.md, report.json, report.png")
        failed = [i["label"] for i in outcome.report["items"] if i.get("status") != "ok"]
        if outcome.interrupted:
            sys.stderr.write(f"edgebert: interrupted; the report in {outcome.out_dir} holds what was measured\n")
            return 130
        if failed:
            sys.stderr.write(f"edgebert: {len(failed)} item(s) failed: {', '.join(failed)} (see the report)\n")
            return 1
        return 0


def _command_line() -> list[str]:
    """The command as typed, for the report (`edgebert bench ...` or `python -m edgebert.bench ...`)."""
    argv = list(sys.argv)
    if len(argv) > 1 and argv[1] == "bench":
        return ["edgebert", *argv[1:]]
    if argv and argv[0].endswith("__main__.py"):
        return ["python", "-m", "edgebert.bench", *argv[1:]]
    return ["edgebert", "bench", *argv[1:]]
