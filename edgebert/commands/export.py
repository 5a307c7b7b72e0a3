"""`edgebert export`: a verified ONNX, TFLite or TF.js export with tokenizer and manifest."""

from __future__ import annotations

import argparse

TARGET_CHOICES = ("onnx", "tflite", "tfjs")


class ExportCommand:
    """`edgebert export`: a verified ONNX, TFLite or TF.js export with tokenizer and manifest."""

    name = "export"
    help = "export a model to ONNX, TFLite or TF.js and verify it against PyTorch"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        required = parser.add_argument_group("required")
        required.add_argument("--target", required=True, help=f"one of: {', '.join(TARGET_CHOICES)}")
        optional = parser.add_argument_group("optional")
        optional.add_argument("--model", default=None, help="model dir, hub id, or 'default' (all-MiniLM-L6-v2)")
        optional.add_argument("--out", default=None, help="output dir (default: edgebert-exports/<model>-<target>)")
        optional.add_argument(
            "--quantize",
            default="none",
            help="onnx: int8, int8-static, fp16; tflite: int8, int8-static, fp16; tfjs: uint8, float16",
        )
        optional.add_argument(
            "--calibration",
            default=None,
            metavar="FILE",
            help="text, one passage per line (.gz ok): activation ranges for --quantize int8-static",
        )
        optional.add_argument(
            "--calibration-samples", type=int, default=None, help="passages of --calibration to use (default 200)"
        )
        optional.add_argument("--seq-len", type=int, default=128, help="token length (fixed for tflite/tfjs)")
        optional.add_argument("--min-cosine", type=float, default=None, help="parity tolerance override")
        optional.add_argument("--force", action="store_true", help="replace a non-empty --out")

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.export import export
        from edgebert.summary import print_export_summary

        report = export(
            target=args.target,
            model=args.model,
            out=args.out,
            quantize=args.quantize,
            seq_len=args.seq_len,
            force=args.force,
            min_cosine=args.min_cosine,
            calibration=args.calibration,
            calibration_samples=args.calibration_samples,
        )
        print_export_summary(report)
        return 0
