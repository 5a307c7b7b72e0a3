"""`edgebert distill`: a BERT teacher into a smaller student with MLM, soft-target and cosine losses."""

from __future__ import annotations

import argparse

from edgebert.sources import DEFAULT_MODEL


class DistillCommand:
    """`edgebert distill`: teacher dir + corpus → student model dir (HF + sentence-transformers + manifest)."""

    name = "distill"
    help = "distil a BERT teacher into a smaller DistilBERT- or TinyBERT-shaped student"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        from edgebert.config import AUTO_LOSSES_HELP, DistillConfig
        from edgebert.options import add_options

        required = parser.add_argument_group("required")
        required.add_argument("--corpus", required=True, nargs="+", help="text files (.gz ok), directories, or HF dataset names")
        required.add_argument("--out", required=True, help="student model directory to write")
        student = parser.add_argument_group("student")
        student.add_argument("--teacher", default=DEFAULT_MODEL, help="teacher dir, hub id, or 'default' (all-MiniLM-L6-v2)")
        losses = parser.add_argument_group("losses", AUTO_LOSSES_HELP)
        add_options(parser, DistillConfig, {"student": student, "losses": losses})

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.config import DistillConfig
        from edgebert.distill import distill
        from edgebert.options import from_args

        report = distill(teacher=args.teacher, corpus=args.corpus, out=args.out, **from_args(DistillConfig, args))
        if not report.main:  # one of several launched processes: the main one reports
            return 0
        m = report.metrics
        print(f"student: {report.out_dir}")
        sts = m.get("sts_spearman") or {}
        if sts:
            print(
                f"STS Spearman: teacher {sts['teacher']:.4f} | student init {sts['student_init']:.4f} "
                f"| distilled {sts['student_final']:.4f} (kept: {sts.get('kept')})"
            )
        print(f"steps/s {m['steps_per_second']} | train {m['train_runtime_s']} s | wall {m['wall_time_s']} s")
        return 0
