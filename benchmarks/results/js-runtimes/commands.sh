#!/usr/bin/env bash
# The demo's runtimes side by side: TF.js wasm (buckets, fixed 128) on a TF.js uint8 export, onnxruntime-web wasm on
# the same model's ONNX int8 export, LiteRT.js wasm (XNNPACK) on its TFLite int8 export with one signature per length
# (the lengths of the web page's export, demo_app/scripts/prepare.sh), and
# transformers.js (its pipeline('feature-extraction', dir, { dtype }) and tokenizer) on its ONNX int8 export laid out
# with --layout transformers.js (called with the options its manifest records), in Node (one thread each) and in
# headless Chromium (the pages cross-origin isolated as `npm run web` serves them: every runtime on one thread, then
# every runtime on two threads); a query = tokenise + embed + rank the demo's 44 notes; whether the five bench
# queries' top-5 notes agree; and the student's LiteRT.js signatures each run alone in Chromium (bench.ts --signatures).
#   student: the demo app's student (demo_app/scripts/prepare.sh --corpus ...: the `small` preset's shape on the
#            demo's CI-sized schedule): STUDENT=the model dir its run's report/pipeline.json names as `student`
#   teacher: the packaged all-MiniLM-L6-v2
# Each model is exported into A as the bench reads it (an export already in A is kept): TF.js uint8 --buckets,
# ONNX int8, TFLite int8 --seq-len 4 8 12 16 24 32 64 128 (made again when its manifest has other lengths), ONNX
# int8 --layout transformers.js (made again when its manifest records no pipeline options: an export made before it
# did). EDGEBERT overrides
# the CLI (default: the repository's .venv/bin/edgebert, else `edgebert` on PATH).
# Run it with every other job stopped (the runs.txt beside it was not: other jobs loaded the machine, see
# benchmarks/README.md).
#   STUDENT=... A=... bash benchmarks/results/js-runtimes/commands.sh
set -euo pipefail
STUDENT=${STUDENT:?the model dir of the demo student (the student named by report/pipeline.json of its pipeline run)}
A=${A:?a directory for the exports (made when missing; exports already there are kept)}
OUT=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$OUT/../../.." && pwd)
if [ -z "${EDGEBERT:-}" ]; then
  if [ -x "$ROOT/.venv/bin/edgebert" ]; then EDGEBERT="$ROOT/.venv/bin/edgebert"; else EDGEBERT=edgebert; fi
fi
RUNS=${RUNS:-40}

LITERTJS_LENGTHS=(4 8 12 16 24 32 64 128)  # the web page's (demo_app/scripts/prepare.sh)

# Whether the export in DIR has one signature per length of LENGTHS... (its manifest's buckets)
has_lengths() {
  local dir="$1"
  shift
  [ "$(node -e 'const m = require(process.argv[1]); console.log((m.buckets || []).map((b) => b.seq_len).join(" "))' "$dir/edgebert.json")" = "$*" ]
}

# export NAME MODEL ARGS...: `edgebert export` into $A/NAME unless an export is there already (its output on stderr)
export_once() {
  local out="$A/$1" model="$2"
  shift 2
  if [ -f "$out/edgebert.json" ] && { [[ "$*" != *"--layout transformers.js"* ]] || grep -q '"pipeline_options"' "$out/edgebert.json"; } &&
    { [[ "$*" != *"--target tflite"* ]] || has_lengths "$out" "${LITERTJS_LENGTHS[@]}"; }; then
    return
  fi
  "$EDGEBERT" export --model "$model" --out "$out" --force "$@" >&2
}
mkdir -p "$A"
for who in student teacher; do
  if [ "$who" = student ]; then model="$STUDENT"; else model=default; fi
  export_once "$who-tfjs" "$model" --target tfjs --quantize uint8 --buckets
  export_once "$who-onnx" "$model" --target onnx --quantize int8
  export_once "$who-tflite" "$model" --target tflite --quantize int8 --seq-len "${LITERTJS_LENGTHS[@]}"
  export_once "$who-transformers-js" "$model" --target onnx --quantize int8 --layout transformers.js
done

cd "$ROOT/demo_app"
node scripts/build-web.mjs  # the page with every runtime the bench opens
{
  for who in student teacher; do
    node --import tsx scripts/bench.ts --model-dir "$A/$who-tfjs" --onnx-dir "$A/$who-onnx" --tflite-dir "$A/$who-tflite" \
      --transformers-js-dir "$A/$who-transformers-js" --runs "$RUNS" --threads 1,2
  done
  # where the student's LiteRT.js query goes: each signature's run alone, one thread
  node --import tsx scripts/bench.ts --tflite-dir "$A/student-tflite" --signatures --runs "$RUNS"
} | tee "$OUT/runs.txt"
