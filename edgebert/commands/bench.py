"""`edgebert bench`: size, latency, memory and accuracy retention of model dirs, exports and model files."""

from __future__ import annotations

import argparse
import sys


def _positive_ints(text: str) -> list[int]:
    """'128' or '64,128' -> [128] / [64, 128] (argparse also accepts repeated values via nargs)."""
    try:
        return [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected integers, got '{text}'") from exc


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
        data = parser.add_argument_group("accuracy")
        data.add_argument("--reference", default=None, help="the ITEM (or label) others are compared to (default: the first)")
        data.add_argument("--sts", default=None, help="STS-B style CSV (sentence1,sentence2,score 0-5) for Spearman")
        data.add_argument("--sts-limit", type=int, default=None, help="use only the first N pairs (default: all)")
        data.add_argument(
            "--sts-limit-for",
            action="append",
            default=[],
            metavar="TARGET=N",
            help="fewer STS pairs for one target (e.g. tfjs=200: slow runtimes); retention uses the same pairs",
        )
        data.add_argument("--sst2", default=None, help="SST-2 TSV (sentence<TAB>label) for classifier model dirs")
        data.add_argument("--sst2-limit", type=int, default=1000, help="use only the first N SST-2 rows (default 1000)")
        timing = parser.add_argument_group("latency")
        timing.add_argument("--seq-len", type=_positive_ints, nargs="+", default=[[128]], help="token lengths (default 128)")
        timing.add_argument("--batch", type=_positive_ints, nargs="+", default=[[1]], help="batch sizes (default 1)")
        timing.add_argument("--threads", type=_positive_ints, nargs="+", default=[[1]], help="CPU threads (default 1)")
        timing.add_argument("--warmup", type=int, default=5, help="untimed calls before timing (default 5)")
        timing.add_argument("--repeats", type=int, default=30, help="timed calls per configuration (default 30)")
        items = parser.add_argument_group("items")
        items.add_argument("--torch-int8", action="store_true", help="add a PyTorch dynamic-int8 twin of every model dir")
        items.add_argument("--tokenizer", default=None, help="tokenizer dir for bare .onnx/.tflite files")
        items.add_argument("--pooling", default="mean", help="pooling for bare files without a sentence_embedding output")
        run = parser.add_argument_group("run")
        run.add_argument("--timeout", type=float, default=None, help="seconds per item before it is marked failed")
        run.add_argument("--in-process", action="store_true", help="no worker process per item (debugging; memory is approximate)")
        run.add_argument("--force", action="store_true", help="replace a non-empty --out")

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.bench.harness import build_config, run_bench
        from edgebert.bench.measure import MeasureJob

        def flat(values: list[list[int]]) -> list[int]:
            return list(dict.fromkeys(v for group in values for v in group))

        seq_lens = flat(args.seq_len)
        sts_limits = _target_limits(args.sts_limit_for)
        job = MeasureJob(
            seq_lens=seq_lens,
            batches=flat(args.batch),
            threads=flat(args.threads),
            warmup=args.warmup,
            repeats=args.repeats,
            sts_path=args.sts,
            sts_limit=args.sts_limit,
            sts_limits=sts_limits,
            sts_max_length=max(seq_lens) if seq_lens else 128,
            sst2_path=args.sst2,
            sst2_limit=args.sst2_limit,
        )
        config = build_config(
            args.items,
            reference=args.reference,
            torch_int8=args.torch_int8,
            tokenizer=args.tokenizer,
            pooling=args.pooling,
            job=job,
            isolate=not args.in_process,
            timeout_s=args.timeout,
            command=_command_line(),
        )
        outcome = run_bench(config, args.out, force=args.force)
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


def _target_limits(values: list[str]) -> dict[str, int]:
    """['tfjs=200'] -> {'tfjs': 200}; UserError on anything else."""
    from edgebert.errors import UserError

    targets = ("pytorch", "onnx", "tflite", "tfjs")
    limits: dict[str, int] = {}
    for value in values:
        target, _, number = value.partition("=")
        if target not in targets or not number.strip().isdigit() or int(number) < 2:
            raise UserError(f"--sts-limit-for {value}: expected TARGET=N with TARGET one of {', '.join(targets)} and N >= 2")
        limits[target] = int(number)
    return limits
