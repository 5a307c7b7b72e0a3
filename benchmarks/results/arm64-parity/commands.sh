#!/usr/bin/env bash
# Integer exports checked on the emulated ARM64 kernel paths (qemu-aarch64 10.0, cortex-a53 / -a76 / -a710; TFLite
# XNNPACK on each and the built-in kernels on -a76; ExecuTorch's XNNPACK delegate on each through edgebert's C
# interface to its aarch64 runtime), 8 texts of each parity check per path, beside the host's
# paths (every text). STUDENT: the demo app's student (the `small` preset's shape on the demo's CI-sized schedule,
# demo_app/scripts/prepare.sh); the teacher: the packaged all-MiniLM-L6-v2.
#   usage: commands.sh STUDENT WORK
set -euo pipefail
STUDENT=${1:?the student model dir}; WORK=${2:?a scratch dir}
OUT=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../.."
EDGEBERT_ARM64_TEXTS=8 .venv/bin/python benchmarks/suites/export_cost.py --model "$STUDENT" --runs onnx:int8 tflite:int8 executorch:int8 \
  --work "$WORK/student" --out "$OUT/student" --label arm64
EDGEBERT_ARM64_TEXTS=8 .venv/bin/python benchmarks/suites/export_cost.py --model default --runs onnx:int8 executorch:int8 \
  --work "$WORK/teacher" --out "$OUT/teacher" --label arm64
