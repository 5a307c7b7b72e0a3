#!/usr/bin/env bash
# The demo's runtimes side by side: TF.js wasm (buckets, fixed 128) on a TF.js uint8 export and
# onnxruntime-web wasm on the same model's ONNX int8 export, in Node and in headless Chromium, one thread each; a query
# = tokenise + embed + rank the demo's 44 notes; and whether the five bench queries' top-5 notes agree.
#   student: the demo app's student (demo_app/scripts/prepare.sh --corpus ...: the `small` preset's shape on the
#            demo's CI-sized schedule), exported as prepare.sh exports it (TF.js uint8 --buckets, ONNX int8)
#   teacher: the packaged all-MiniLM-L6-v2, TF.js uint8 --buckets and ONNX int8
# Every other job stopped while it ran.
set -euo pipefail
A=${A:?the directory of the four export directories}
OUT=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../../demo_app"
{
  node --import tsx scripts/bench.ts --model-dir "$A/student-tfjs" --onnx-dir "$A/student-onnx" --runs 40
  node --import tsx scripts/bench.ts --model-dir "$A/teacher-tfjs" --onnx-dir "$A/teacher-onnx" --runs 40
} | tee "$OUT/runs.txt"
