"""demo_app (React Native + web demo of a TF.js export): its Node tests, browser test and type check, run from pytest.

The demo's own tests live in demo_app/test/ (node --test): token ids equal Python's, embeddings match PyTorch,
search finds the expected notes, and the web page finds them in headless Chromium. This wrapper makes the README's
test command cover them. It needs Node/npm, demo_app's packages and Chromium (demo_app/scripts/install.sh, called by
the repository's install.sh): when they are missing it fails, it does not skip, except in an environment installed
with `./install.sh --python-only` (which skips the demo's dependencies): there it skips and names the command to
run.

The app ships the `small` preset's student, so the tests run on it: demo_app/scripts/prepare.sh --corpus distils it
with the committed recipe demo_app/student.toml on ../shared/data's corpus (about 10 minutes on 2 cores, once: the
pipeline run is kept in EDGEBERT_DEMO_STUDENT_WORK, default ~/.cache/edgebert/demo-student, and resumed), exports it
to TF.js uint8 with buckets, writes the PyTorch reference, precomputes the note embeddings and builds the web page.
Without ../shared/data the model tests skip (there is no text to distil on); a user passes their own corpus.

Everything runs in a copy of demo_app in a temporary directory (its node_modules linked), so the checkout is never
written to.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "demo_app"
RUNTIME_JS = ROOT / "js" / "edgebert-runtime"  # the package the app runs exports with (a file: dependency)
# What prepare.sh writes, relative to the app dir.
PREPARED = (
    "assets/model/model.json",
    "assets/model/edgebert.json",
    "assets/model/tokenizer.json",
    "assets/model-onnx/model.onnx",
    "assets/model-tflite/model.tflite",
    "assets/model-tflite-buckets/model.tflite",
    "assets/model-et/model.pte",
    "assets/reference.json",
    "assets/note_embeddings.json",
    "web/dist/main.js",
)
# Not copied: installed packages (linked instead), prepare.sh's output, the student's pipeline run, build output.
GENERATED = {"node_modules", "model", "model-onnx", "model-tflite", "model-tflite-buckets", "model-et", "note_embeddings.json", "reference.json", ".student", "dist", ".expo", "android", "ios"}
# The demo student's distillation text (../shared/data, see its README) and the STS pairs its checkpoint is chosen on.
DEMO_CORPUS = (SHARED_DATA / "corpus" / "sotu.txt.gz", SHARED_DATA / "stsb" / "train.csv", SHARED_DATA / "sst2" / "train.tsv")
DEMO_EVAL_STS = SHARED_DATA / "stsb" / "train.csv"
STUDENT_WORK = Path(os.environ.get("EDGEBERT_DEMO_STUDENT_WORK") or Path.home() / ".cache" / "edgebert" / "demo-student")
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
INSTALL_HINT = "run demo_app/scripts/install.sh (npm ci in demo_app, apt-get install chromium)"
# Written by `./install.sh --python-only` into the environment it installs (removed by a full ./install.sh).
PYTHON_ONLY_MARKER = Path(sys.prefix) / "edgebert-python-only"

pytestmark = pytest.mark.integration


def _run(command: list[str], app: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # prepare.sh calls `edgebert` from this interpreter's environment.
    env["EDGEBERT"] = env.get("EDGEBERT") or str(Path(sys.executable).with_name("edgebert"))
    env.setdefault("NO_COLOR", "1")
    return subprocess.run(command, cwd=app, env=env, capture_output=True, text=True, timeout=timeout)


def _ignore_generated(directory: str, names: list[str]) -> set[str]:
    """copytree's ignore: the GENERATED names directly under demo_app, assets/ or web/."""
    relative = Path(directory).relative_to(APP).as_posix()
    return set(names) & GENERATED if relative in (".", "assets", "web") else set()


def copy_app(dest: Path) -> Path:
    """demo_app's sources copied to `dest`, node_modules linked, and edgebert-runtime linked where the app's file:
    dependency finds it (beside the copy, as in the repository)."""
    shutil.copytree(APP, dest, ignore=_ignore_generated)
    if (APP / "node_modules").is_dir():
        (dest / "node_modules").symlink_to(APP / "node_modules", target_is_directory=True)
    runtime = dest.parent / RUNTIME_JS.relative_to(ROOT)
    if not runtime.exists():
        runtime.parent.mkdir(parents=True, exist_ok=True)
        runtime.symlink_to(RUNTIME_JS, target_is_directory=True)
    return dest


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of demo_app: what the tests and prepare.sh write lands there, not in the checkout."""
    return copy_app(tmp_path_factory.mktemp("demo") / "demo_app")


def missing_dependency(what: str) -> None:
    """Skip in a --python-only environment (the demo's dependencies were left out on purpose), fail otherwise."""
    if PYTHON_ONLY_MARKER.exists():
        pytest.skip(f"{what}: this environment was installed with ./install.sh --python-only; {INSTALL_HINT}")
    pytest.fail(f"{what}: {INSTALL_HINT}")


def _report(proc: subprocess.CompletedProcess[str], limit: int = 12000) -> str:
    out = (proc.stdout + "\n" + proc.stderr).strip()
    return out if len(out) <= limit else "…\n" + out[-limit:]


@pytest.fixture(scope="module")
def npm() -> str:
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        missing_dependency("Node.js/npm not found: the demo app's tests need Node 20+")
    missing = [p for p in ("@tensorflow/tfjs-core", "@huggingface/tokenizers", "tsx", "typescript", "playwright-core")
               if not (APP / "node_modules" / p / "package.json").exists()]  # fmt: skip
    if missing:
        missing_dependency(f"demo_app's npm packages are not installed ({', '.join(missing)} missing)")
    return npm


@pytest.fixture(scope="module")
def prepared(npm: str, app: Path) -> Path:
    """The copy's model dir: the demo's student, built and put into the copy by demo_app/scripts/prepare.sh."""
    missing = [str(p) for p in DEMO_CORPUS if not p.is_file()]
    if missing:
        pytest.skip(f"no text to distil the demo's student on ({', '.join(missing)} missing): "
                    "run demo_app/scripts/prepare.sh --corpus FILE... and then npm test in demo_app")  # fmt: skip
    command = ["bash", "scripts/prepare.sh", "--corpus", *map(str, DEMO_CORPUS), "--eval-sts", str(DEMO_EVAL_STS),
               "--work", str(STUDENT_WORK)]  # fmt: skip
    proc = _run(command, app, timeout=3600)
    assert proc.returncode == 0, f"demo_app/scripts/prepare.sh failed:\n{_report(proc)}"
    assert all((app / p).exists() for p in PREPARED), _report(proc)
    return app / "assets" / "model"


def _node_test_summary(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    counts = dict(re.findall(r"^ℹ (\w+) (\d+)$", proc.stdout, flags=re.M))
    return {k: int(v) for k, v in counts.items()}


def _assert_node_tests_passed(proc: subprocess.CompletedProcess[str], what: str) -> dict[str, int]:
    counts = _node_test_summary(proc)
    assert proc.returncode == 0, f"{what} failed:\n{_report(proc)}"
    assert counts.get("pass", 0) > 0, f"{what} ran no tests:\n{_report(proc)}"
    # The tests skip only without a model or for a model other than the fixture's: after prepare, that is an error.
    # (node --test's spec reporter marks a skipped test or suite with "﹣ name … # reason")
    skips = [line.strip() for line in proc.stdout.splitlines() if line.lstrip().startswith("﹣")]
    assert not skips and counts.get("skipped", 0) == 0, (
        f"{what} skipped tests (after demo_app/scripts/prepare.sh every test must run):\n"
        + "\n".join(skips)
    )
    return counts


@pytest.mark.parametrize(
    ("args", "needle"),
    [([], "no model given"), (["--model", "default", "--corpus", "a.txt"], "exclude each other"), (["--model"], "needs a value")],
)  # fmt: skip
def test_prepare_without_a_model_is_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = _run(["bash", str(APP / "scripts" / "prepare.sh"), *args], tmp_path, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0] and "--corpus FILE" in lines[0], proc.stderr


STUB = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/calls"
case "$*" in
  *--dry-run*) cat "$(dirname "$0")/dry-run" >&2; exit "$(cat "$(dirname "$0")/dry-run-exit")" ;;
  pipeline*)  # a finished run: its report names the final student
    prev=""; for a in "$@"; do [ "$prev" = --out ] && out="$a"; prev="$a"; done
    mkdir -p "$out"; echo '{"student": "/runs/named/by/pipeline.json"}' > "$out/pipeline.json"; exit 0 ;;
  *) exit 1 ;;  # export: stop prepare.sh here
esac
"""


@pytest.mark.parametrize(
    ("dry_run_exit", "dry_run_says", "mode"),
    [(0, "plan: ...", "--resume"), (2, "edgebert: error: --resume: the recipe differs from the run in W", "--force"),
     (2, "edgebert: error: corpus x does not exist; pass --corpus ...", None)],
)  # fmt: skip
def test_prepare_resumes_the_students_run_and_starts_over_only_for_another_recipe(
    tmp_path: Path, dry_run_exit: int, dry_run_says: str, mode: str | None
) -> None:
    """prepare.sh --corpus resumes its pipeline run (a second prepare only re-exports), starts over when the recipe or
    inputs changed, and stops with the pipeline's own line on any other problem (never wiping the run for it)."""
    app = tmp_path / "demo_app"
    (app / "scripts").mkdir(parents=True)
    (app / "node_modules" / "@tensorflow" / "tfjs-backend-wasm").mkdir(parents=True)
    shutil.copy2(APP / "scripts" / "prepare.sh", app / "scripts")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "edgebert").write_text(STUB)
    (bin_dir / "edgebert").chmod(0o755)
    (bin_dir / "dry-run").write_text(dry_run_says + "\n")
    (bin_dir / "dry-run-exit").write_text(str(dry_run_exit))
    (tmp_path / "work" / "report").mkdir(parents=True)  # a previous run's report
    env = {**os.environ, "EDGEBERT": str(bin_dir / "edgebert")}
    proc = subprocess.run(["bash", "scripts/prepare.sh", "--corpus", "a.txt", "--work", str(tmp_path / "work")],
                          cwd=app, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    calls = (bin_dir / "calls").read_text().splitlines()
    if mode is None:
        assert (tmp_path / "work" / "report").exists()  # nothing of the last run is wiped for a bad input
        assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == dry_run_says
        assert len(calls) == 1  # the check only
        return
    assert proc.returncode == 1  # the stub's export
    assert calls[1].startswith("pipeline --recipe") and calls[1].endswith(f"{mode} --quiet"), calls
    assert "--model /runs/named/by/pipeline.json " in calls[2]  # the student the run's pipeline.json names


def test_npm_test_without_a_model_fails_with_the_reason(npm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh checkout's `npm test` is red, naming what to run, not green with its model suites skipped; a partial
    run is asked for with EDGEBERT_DEMO_ALLOW_SKIP=1."""
    fresh = copy_app(tmp_path / "demo_app")
    proc = _run([npm, "run", "--silent", "test:node"], fresh, timeout=600)
    assert proc.returncode != 0 and "run `bash scripts/prepare.sh`" in proc.stdout + proc.stderr, _report(proc)
    monkeypatch.setenv("EDGEBERT_DEMO_ALLOW_SKIP", "1")
    proc = _run([npm, "run", "--silent", "test:node"], fresh, timeout=600)
    assert proc.returncode == 0, _report(proc)


def test_app_type_checks(npm: str, app: Path) -> None:
    proc = _run([npm, "run", "--silent", "typecheck"], app, timeout=600)
    assert proc.returncode == 0, f"tsc --noEmit failed in demo_app:\n{_report(proc)}"


def test_node_tests(npm: str, app: Path, prepared: Path) -> None:
    """Token ids vs Python, embeddings vs PyTorch (cos >= 0.999), search, in Node on the wasm backend."""
    proc = _run([npm, "run", "--silent", "test:node"], app, timeout=1800)
    counts = _assert_node_tests_passed(proc, "demo_app Node tests (npm run test:node)")
    assert counts["pass"] >= 20, counts


def test_browser_end_to_end(npm: str, app: Path, prepared: Path) -> None:
    """The web page in headless Chromium, served cross-origin isolated as `npm run web` serves it: type a query, see
    the expected top note on the default runtime (LiteRT.js); LiteRT.js and onnxruntime-web on two wasm threads find
    TF.js wasm's top-5 notes in its order; on TF.js's WebGL backend (SwiftShader) the same hits and scores as on its
    wasm one."""
    if not CHROMIUM.exists():
        missing_dependency(f"no Chromium at {CHROMIUM} (set CHROMIUM=...)")
    proc = _run([npm, "run", "--silent", "test:browser"], app, timeout=1200)
    counts = _assert_node_tests_passed(proc, "demo_app browser test (npm run test:browser)")
    assert counts["pass"] >= 4, counts  # WebGL vs wasm, LiteRT.js and onnxruntime-web vs TF.js, the typed query


def test_android_bundle_is_built_offline_with_every_runtimes_export(npm: str, app: Path, prepared: Path) -> None:
    """`npx expo export --platform android` bundles the app offline (Metro, no network, no native build): the JS bundle
    with the runtime setting's four exports as assets: the TF.js weights shard, the ONNX model, the TFLite one and the
    ExecuTorch program."""
    out = app / "dist"
    env = {"EXPO_OFFLINE": "1", "CI": "1", "EXPO_NO_TELEMETRY": "1"}
    proc = subprocess.run([str(Path(npm).with_name("npx")), "expo", "export", "--platform", "android", "--output-dir", str(out)],
                          cwd=app, env={**os.environ, **env}, capture_output=True, text=True, timeout=1800)  # fmt: skip
    assert proc.returncode == 0, f"npx expo export --platform android failed:\n{_report(proc)}"
    metadata = json.loads((out / "metadata.json").read_text())["fileMetadata"]["android"]
    assert (out / metadata["bundle"]).stat().st_size > 100_000
    shipped = {asset["ext"]: (out / asset["path"]).stat().st_size for asset in metadata["assets"]}
    assert shipped["bin"] == (prepared / "group1-shard1of1.bin").stat().st_size
    assert shipped["onnx"] == (prepared.parent / "model-onnx" / "model.onnx").stat().st_size
    assert shipped["tflite"] == (prepared.parent / "model-tflite" / "model.tflite").stat().st_size
    tflite = json.loads((prepared.parent / "model-tflite" / "edgebert.json").read_text())
    lengths = [b["seq_len"] for b in tflite.get("buckets") or ()]
    assert tflite["target"] == "tflite" and lengths in ([], [tflite["seq_len"]]) and tflite["parity"]["passed"] is True  # one subgraph
    assert shipped["pte"] == (prepared.parent / "model-et" / "model.pte").stat().st_size
    et = json.loads((prepared.parent / "model-et" / "edgebert.json").read_text())
    assert et["target"] == "executorch" and et["quantization"] == "int8" and et["parity"]["passed"] is True


def test_prepared_export_is_the_small_students_bucketed_single_shard_tfjs_model(prepared: Path) -> None:
    from edgebert.config import DEFAULT_BUCKETS
    from edgebert.pipeline.recipe import load_preset

    manifest = json.loads((prepared / "edgebert.json").read_text())
    assert manifest["target"] == "tfjs" and manifest["quantization"] == "uint8"
    assert manifest["target_details"]["weight_shards"] == ["group1-shard1of1.bin"]  # the app require()s this name
    assert manifest["parity"]["passed"] is True
    assert [b["seq_len"] for b in manifest["buckets"]] == list(DEFAULT_BUCKETS)
    small = load_preset("small")
    assert manifest["model"]["layers"] == small.distill.student_layers
    student = json.loads((Path(manifest["parent"]) / "config.json").read_text())
    assert student["embedding_size"] == small.distill.embedding_dim


def _bash_array(script: Path, name: str) -> list[int]:
    """The integers of a bash array assignment `NAME=(…)` in `script`."""
    found = re.search(rf"^{name}=\(([^)]*)\)", script.read_text(), re.MULTILINE)
    assert found, f"{script.relative_to(ROOT)} assigns no {name}=(…)"
    return [int(n) for n in found.group(1).split() if not n.startswith("#")]


def test_the_web_pages_litertjs_lengths_are_whole_xnnpack_tiles_and_the_bench_runs_them() -> None:
    """LiteRT.js's wasm build runs the products in XNNPACK tiles of 4 tokens (x86): a length that is not a whole tile
    costs what the next whole one does (10 what 12 does), so the web page's TFLite export has one signature per whole
    tile count up to 32, from one tile (one- and two-word queries) on; the js-runtimes bench exports those lengths."""
    page = _bash_array(APP / "scripts" / "prepare.sh", "LITERTJS_LENGTHS")
    bench = _bash_array(ROOT / "benchmarks" / "results" / "js-runtimes" / "commands.sh", "LITERTJS_LENGTHS")
    assert bench == page
    assert page == sorted(set(page)) and page[0] == 4 and all(n % 4 == 0 for n in page), page
    assert len(page) == 8, page  # as many signatures as before the tiles: the same file size


def test_bench_times_each_litertjs_signature_and_names_the_int8_kernels(npm: str, tmp_path: Path) -> None:
    """`npm run bench -- --signatures` on a TFLite export with buckets: each signature's run in Chromium on LiteRT.js,
    back to back and after a pause, and what XNNPACK's probe of the relaxed int8 dot product found."""
    from model_zoo import build_bert

    from edgebert.export import export

    if not CHROMIUM.exists():
        missing_dependency(f"no Chromium at {CHROMIUM} (set CHROMIUM=...)")
    out = tmp_path / "tflite"
    export("tflite", model=build_bert(tmp_path / "embedder"), out=out, quiet=True, seq_len=[4, 8])
    proc = _run(["node", "--import", "tsx", "scripts/bench.ts", "--tflite-dir", str(out), "--signatures", "--runs", "4"], APP, timeout=600)
    assert proc.returncode == 0, _report(proc)
    lines = proc.stdout.splitlines()
    assert any(re.fullmatch(r"  (relaxed int8 dot product (saturates|exact)|no relaxed SIMD).*kernels.*", line) for line in lines), proc.stdout
    for length, key in ((4, "seq_4"), (8, "serving_default")):
        timed = [line for line in lines if line.startswith(f"  length {length:3d} ({key}): back to back median ")]
        assert len(timed) == 1 and "after a 10 ms pause median " in timed[0] and timed[0].count("(n=10)") == 2  # 10 rounds of one, proc.stdout
