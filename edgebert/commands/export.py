"""`edgebert export`: a verified ONNX, TFLite or TF.js export with tokenizer and manifest."""

from __future__ import annotations

import argparse

from edgebert.config import ExportConfig
from edgebert.options import add_options, from_args

TARGET_CHOICES = ("onnx", "tflite", "tfjs", "executorch")


class ExportCommand:
    """`edgebert export`: a verified ONNX, TFLite or TF.js export with tokenizer and manifest."""

    name = "export"
    help = "export a model to ONNX, TFLite, TF.js or ExecuTorch and verify it against PyTorch"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        required = parser.add_argument_group("required")
        required.add_argument("--target", required=True, help=f"one of: {', '.join(TARGET_CHOICES)}")
        optional = parser.add_argument_group("optional")
        optional.add_argument("--model", default=None, help="model dir, hub id, or 'default' (all-MiniLM-L6-v2)")
        optional.add_argument("--out", default=None, help="output dir (default: edgebert-exports/<model>-<target>)")
        add_options(parser, ExportConfig, {"optional": optional})

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.export import export
        from edgebert.summary import print_export_summary

        report = export(args.target, args.model, args.out, **from_args(ExportConfig, args))
        print_export_summary(report)
        return 0
