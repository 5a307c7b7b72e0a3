#!/usr/bin/env python
"""The knob-ladder table of a frontier run (benchmarks/suites/frontier.sh): one row per student, its three exports side by side.

Size (MB), STS-B retention (against the teacher in PyTorch fp32, on the same pairs) and speed-up against the
teacher's fp32 export in the *same runtime* (ONNX vs teacher-onnx, TF.js vs teacher-tfjs; TFLite against
teacher-onnx, as the teacher has no fp32 TFLite item in the run), all from one report.json:

    .venv/bin/python benchmarks/suites/frontier_table.py benchmarks/results/frontier/report.json
"""

from __future__ import annotations

import json
import sys

EXPORTS = (("onnx", "int8"), ("tflite", "int8"), ("tfjs", "uint8"))
BASELINE = {"onnx": "teacher-onnx", "tflite": "teacher-onnx", "tfjs": "teacher-tfjs"}


def main(path: str) -> None:
    report = json.loads(open(path, encoding="utf-8").read())
    items = {i["label"]: i for i in report["items"] if i["status"] == "ok"}

    def ms(label: str) -> float:
        return float(items[label]["derived"]["latency_ms"])

    students = [label[: -len("-onnx-int8")] for label in items if label.endswith("-onnx-int8")]
    print("| student | MB: ONNX int8 / TFLite int8 / TF.js uint8 | STS-B retention (same order) | ms and speed-up (ONNX and TFLite vs teacher ONNX fp32, TF.js vs teacher TF.js fp32) |")
    print("|---|---|---|---|")
    for s in students:
        labels = [f"{s}-{t}-{q}" for t, q in EXPORTS]
        if not all(label in items for label in labels):
            continue
        sizes = " / ".join(f"{items[label]['model_bytes'] / 1e6:.1f}" for label in labels)
        retention = " / ".join(f"{100 * items[label]['derived']['sts_retention']:.1f} %" for label in labels)
        speed = " / ".join(
            f"{ms(label):.2f} ({ms(BASELINE[t]) / ms(label):.2f}×)" for label, (t, _) in zip(labels, EXPORTS)
        )
        print(f"| {s} | {sizes} | {retention} | {speed} |")
    print(f"\nteacher: ONNX fp32 {ms('teacher-onnx'):.2f} ms, TF.js fp32 {ms('teacher-tfjs'):.2f} ms; STS-B dev "
          f"{items['teacher']['sts']['spearman']:.4f} (TF.js items: first {items['teacher-tfjs']['sts']['pairs']} pairs)")


if __name__ == "__main__":
    main(sys.argv[1])
