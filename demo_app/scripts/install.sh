#!/usr/bin/env bash
# Install what the demo app and its tests need:
#   - its npm packages, exactly as locked (npm ci: Expo/React Native, TF.js, ONNX Runtime, LiteRT, LiteRT.js,
#     ExecuTorch, tokenizers, transformers.js for the bench, esbuild, playwright-core);
#   - Debian's Chromium for the browser test (apt-get, only when missing and running as root; playwright's own
#     browser download is not used). CHROMIUM=/path/to/chromium points the test at another build.
# Idempotent: npm ci runs only when node_modules does not match package-lock.json.
# Called from the repository's install.sh (not with --python-only); then `demo_app/scripts/prepare.sh` puts a model into the app.
set -euo pipefail
APP_DIR="$(cd "$(dirname "$0")/.." && pwd)"

if ! command -v npm >/dev/null; then
  echo "demo_app/scripts/install.sh: npm not found; install Node.js 20+" >&2
  exit 1
fi
# npm ci writes node_modules/.package-lock.json; reinstall when the lock file is newer or packages are missing.
if [ ! -f "$APP_DIR/node_modules/.package-lock.json" ] \
  || [ "$APP_DIR/package-lock.json" -nt "$APP_DIR/node_modules/.package-lock.json" ]; then
  # react-native-executorch's postinstall downloads its native libraries (package.json's "react-native-executorch"
  # block: XNNPACK only) from GitHub. Only a native build needs them: where GitHub is out of reach (an offline CI),
  # the JS bundle and every test here work without, and the download is skipped with a line saying how to get it.
  if [ -z "${RNET_SKIP_DOWNLOAD:-}" ] && ! node -e 'fetch("https://github.com", {method: "HEAD", signal: AbortSignal.timeout(8000)}).catch(() => process.exit(1))' 2>/dev/null; then
    echo "demo_app/scripts/install.sh: github.com unreachable: react-native-executorch's native libraries not downloaded;" \
      "before a native build (npx expo run:android|ios) run: npm rebuild react-native-executorch --prefix demo_app" >&2
    export RNET_SKIP_DOWNLOAD=1
  fi
  # onnxruntime-node (transformers.js's Node runtime, which the bench runs) would fetch CUDA libraries from NuGet in
  # its postinstall: its CPU build ships in the npm package, and nothing here uses CUDA.
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix "$APP_DIR" --no-audit --no-fund --loglevel=error
fi

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "demo_app/scripts/install.sh: Chromium not found at $CHROMIUM and not root: run" \
      "'sudo apt-get install -y chromium' (the browser test needs it)" >&2
    exit 1
  fi
fi
echo "demo_app: npm packages and Chromium ($("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")) installed" >&2
