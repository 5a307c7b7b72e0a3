#!/usr/bin/env bash
# The one command that puts a fresh edgebert TF.js export into the demo app:
#   1. edgebert export --target tfjs --out demo_app/assets/model --force   (the packaged teacher by default)
#   2. write src/mobile/bundledGraphs.ts: the React Native bundle's static require() of each bucket graph
#   3. precompute the bundled notes' embeddings with that same export (Node, wasm backend)
#   4. build the web page bundle (web/dist/)
#
# usage: demo_app/scripts/prepare.sh [--model M] [--quantize none|uint8|float16] [--seq-len N[,N...]]
#   (default --seq-len 16,32,64,128: one graph per sequence-length bucket over one weight shard)
#   M: a model directory (e.g. a distilled student), a Hub id, or `default` (the packaged teacher).
#   Any option is passed to `edgebert export`; EDGEBERT=/path/to/edgebert overrides the CLI
#   (default: the repository's .venv/bin/edgebert, else `edgebert` on PATH).
set -euo pipefail
DEMO_BUCKETS="${DEMO_BUCKETS:-16,32,64,128}"
APP_DIR="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(cd "$APP_DIR/.." && pwd)"
if [ -z "${EDGEBERT:-}" ]; then
  if [ -x "$ROOT/.venv/bin/edgebert" ]; then EDGEBERT="$ROOT/.venv/bin/edgebert"; else EDGEBERT=edgebert; fi
fi

if [ ! -d "$APP_DIR/node_modules/@tensorflow/tfjs-backend-wasm" ]; then
  echo "prepare.sh: installing the demo app's npm packages (npm ci)" >&2
  npm ci --prefix "$APP_DIR" --no-audit --no-fund --loglevel=error
fi

# Sequence-length buckets unless the caller chose lengths: a query runs on the smallest graph that holds it.
case " $* " in *" --seq-len"*) SEQ=() ;; *) SEQ=(--seq-len "$DEMO_BUCKETS") ;; esac
echo "prepare.sh: exporting to $APP_DIR/assets/model" >&2
"$EDGEBERT" export --target tfjs --out "$APP_DIR/assets/model" --force "${SEQ[@]}" "$@"

cd "$APP_DIR"
echo "prepare.sh: writing the app's bundle table (one require() per bucket graph)" >&2
node scripts/bundle-table.mjs
echo "prepare.sh: precomputing note embeddings" >&2
node --import tsx scripts/precompute.ts
echo "prepare.sh: building the web page" >&2
node scripts/build-web.mjs
echo "prepare.sh: done. App: npx expo start | tests: npm test" >&2
