#!/usr/bin/env bash
# The one command that puts a model into the demo app. The app ships the `small` preset's student:
#
#   demo_app/scripts/prepare.sh --corpus FILE... [--eval-sts STS.csv] [--work DIR]
#       distils it with the committed recipe demo_app/student.toml (the small preset's student on a CI-sized
#       schedule, ~10 min on 2 cores; `edgebert pipeline`, resumed in --work, default demo_app/.student), then
#       exports it: TF.js uint8 with sequence-length buckets (--buckets)
#   demo_app/scripts/prepare.sh --model DIR [export options]
#       any model dir: a full preset run's student (the `student` its OUT/pipeline.json names),
#       a Hub id, or `default` (the packaged 90 MB teacher); exported with --buckets unless you pass --seq-len
#
# Then, for either:
#   1. edgebert export --target tfjs --out demo_app/assets/model --force [options], and the same model to ONNX int8
#      (--out demo_app/assets/model-onnx: the web page's onnxruntime-web runtime, ?runtime=onnx), to TFLite int8 with
#      one signature per length of 4, 8, 12, 16, 24, 32, 64, 128 (--out demo_app/assets/model-tflite-buckets: the web
#      page's default runtime, LiteRT.js) and at one length (--out demo_app/assets/model-tflite: the app's
#      react-native-fast-tflite runtime, which runs a file's first signature only) and to ExecuTorch int8
#      (--out demo_app/assets/model-et: the app's react-native-executorch runtime)
#   2. the Python/PyTorch reference the Node tests compare with (scripts/make_fixtures.py → assets/reference.json)
#   3. src/mobile/bundledGraphs.ts: the React Native bundle's static require() of each bucket graph
#   4. the bundled notes' embeddings with that same export (Node, wasm backend)
#   5. the web page bundle (web/dist/)
# Any other option is passed to `edgebert export`. EDGEBERT=/path/to/edgebert overrides the CLI (default: the
# repository's .venv/bin/edgebert, else `edgebert` on PATH); its Python runs make_fixtures.py.
set -euo pipefail
APP_DIR="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(cd "$APP_DIR/.." && pwd)"
if [ -z "${EDGEBERT:-}" ]; then
  if [ -x "$ROOT/.venv/bin/edgebert" ]; then EDGEBERT="$ROOT/.venv/bin/edgebert"; else EDGEBERT=edgebert; fi
fi
PYTHON="$(dirname "$(command -v "$EDGEBERT")")/python"
[ -x "$PYTHON" ] || PYTHON=python3

usage() {
  echo "prepare.sh: $1; pass --corpus FILE... (distil the demo's student, ~10 min on 2 cores) or --model DIR" \
    "(a student of \`edgebert pipeline --preset small\`, or \`default\` for the 90 MB teacher)" >&2
  exit 2
}

MODEL="" EVAL_STS="" WORK="$APP_DIR/.student"
CORPUS=() EXPORT_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) [ $# -ge 2 ] || usage "--model needs a value"; MODEL="$2"; shift 2 ;;
    --corpus) shift; while [ $# -gt 0 ] && [[ "$1" != --* ]]; do CORPUS+=("$1"); shift; done ;;
    --eval-sts) [ $# -ge 2 ] || usage "--eval-sts needs a value"; EVAL_STS="$2"; shift 2 ;;
    --work) [ $# -ge 2 ] || usage "--work needs a value"; WORK="$2"; shift 2 ;;
    *) EXPORT_ARGS+=("$1"); shift ;;
  esac
done
if [ -n "$MODEL" ] && [ ${#CORPUS[@]} -gt 0 ]; then usage "--model and --corpus exclude each other"; fi
if [ -z "$MODEL" ] && [ ${#CORPUS[@]} -eq 0 ]; then usage "no model given"; fi

if [ ! -d "$APP_DIR/node_modules/@tensorflow/tfjs-backend-wasm" ]; then
  echo "prepare.sh: installing the demo app's npm packages (npm ci)" >&2
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix "$APP_DIR" --no-audit --no-fund --loglevel=error  # no CUDA download (scripts/install.sh)
fi

if [ ${#CORPUS[@]} -gt 0 ]; then
  # The recipe's run, resumed when --work holds this same recipe and inputs, else started over there.
  RUN=("$EDGEBERT" pipeline --recipe "$APP_DIR/student.toml" --corpus "${CORPUS[@]}" --out "$WORK/report" --work "$WORK/run")
  [ -z "$EVAL_STS" ] || RUN+=(--eval-sts "$EVAL_STS")
  if CHECK="$("${RUN[@]}" --resume --dry-run 2>&1)"; then
    MODE=--resume
  elif [[ "$CHECK" == *"--resume: the recipe differs"* ]]; then
    MODE=--force  # the recipe or its inputs changed: the old run is not this student
  else
    echo "$CHECK" | tail -1 >&2
    exit 2
  fi
  echo "prepare.sh: distilling the demo's student (demo_app/student.toml, $MODE in $WORK)" >&2
  "${RUN[@]}" "$MODE" --quiet
  # the run's final student, as its pipeline.json names it (compress/student, or heal/student when healed from the teacher)
  MODEL="$(PIPELINE_JSON="$WORK/report/pipeline.json" "$PYTHON" -c 'import json, os; print(json.load(open(os.environ["PIPELINE_JSON"]))["student"])')"
  # the small preset's TF.js quantization, unless the caller chose one
  case " ${EXPORT_ARGS[*]:-} " in *" --quantize"*) ;; *) EXPORT_ARGS+=(--quantize uint8) ;; esac
fi

# Sequence-length buckets unless the caller chose lengths: a query runs on the smallest graph that holds it.
case " ${EXPORT_ARGS[*]:-} " in *" --seq-len"* | *" --buckets"*) ;; *) EXPORT_ARGS+=(--buckets) ;; esac
echo "prepare.sh: exporting $MODEL to $APP_DIR/assets/model" >&2
"$EDGEBERT" export --target tfjs --model "$MODEL" --out "$APP_DIR/assets/model" --force "${EXPORT_ARGS[@]}"
echo "prepare.sh: exporting $MODEL to $APP_DIR/assets/model-onnx (onnxruntime-web)" >&2
"$EDGEBERT" export --target onnx --quantize int8 --model "$MODEL" --out "$APP_DIR/assets/model-onnx" --force
# LiteRT.js's wasm build runs the model's products in XNNPACK tiles of 4 rows (tokens) on x86, so a query costs by
# the tile: 9 to 12 tokens the same, 13 to 16 the same (benchmarks/README.md#the-demos-runtimes-side-by-side). The
# lengths are whole tiles: 4 for one- and two-word queries, 24 between 16 and 32, and none at 10 or 14 (they cost
# what 12 and 16 do). Each length is one signature, about 0.6 MB on the demo's student.
LITERTJS_LENGTHS=(4 8 12 16 24 32 64 128)
echo "prepare.sh: exporting $MODEL to $APP_DIR/assets/model-tflite-buckets (the web page's LiteRT.js: one signature per length)" >&2
"$EDGEBERT" export --target tflite --quantize int8 --seq-len "${LITERTJS_LENGTHS[@]}" --model "$MODEL" \
  --out "$APP_DIR/assets/model-tflite-buckets" --force
echo "prepare.sh: exporting $MODEL to $APP_DIR/assets/model-tflite (react-native-fast-tflite: one length)" >&2
"$EDGEBERT" export --target tflite --quantize int8 --model "$MODEL" --out "$APP_DIR/assets/model-tflite" --force
echo "prepare.sh: exporting $MODEL to $APP_DIR/assets/model-et (react-native-executorch)" >&2
"$EDGEBERT" export --target executorch --quantize int8 --model "$MODEL" --out "$APP_DIR/assets/model-et" --force

cd "$APP_DIR"
echo "prepare.sh: writing the PyTorch reference of the Node tests" >&2
"$PYTHON" scripts/make_fixtures.py --export assets/model --out assets/reference.json
echo "prepare.sh: writing the app's bundle table (one require() per bucket graph)" >&2
node scripts/bundle-table.mjs
echo "prepare.sh: precomputing note embeddings" >&2
node --import tsx scripts/precompute.ts
echo "prepare.sh: building the web page" >&2
node scripts/build-web.mjs
echo "prepare.sh: done. App: npx expo start | tests: npm test" >&2
