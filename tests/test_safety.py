"""Hostile input: the source model is never at risk, bad paths are one line (exit 2), broken models exit 1."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import WORDS


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under `directory` with a hash of its bytes."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


def assert_one_line(code: int, err: str, fragment: str, expected: int = 2) -> None:
    assert code == expected, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in err, err


@pytest.fixture()
def model(tiny_bert: Path, tmp_path: Path) -> Path:
    """A copy of the tiny BERT that a test may lose (it must not)."""
    return Path(shutil.copytree(tiny_bert, tmp_path / "X"))


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calib") / "calib.txt"
    path.write_text("\n".join(" ".join(WORDS[i : i + 9]) for i in range(0, len(WORDS) - 9, 3)) + "\n")
    return path


@pytest.mark.parametrize("how", ["same", "dotdot", "inside", "parent"])
def test_export_never_overwrites_its_model(run_cli: Callable[..., tuple[int, str, str]], model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.chdir(tmp_path)
    before, listing = snapshot(tmp_path), sorted(p.name for p in tmp_path.iterdir())
    out = {"same": str(model), "dotdot": "X/../X", "inside": "X/onnx", "parent": str(tmp_path)}[how]
    code, _, err = run_cli("export", "--target", "onnx", "--model", str(model), "--out", out, "--force", "--seq-len", "16")
    assert_one_line(code, err, "--model")
    assert snapshot(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == listing


@pytest.mark.parametrize("how", ["same", "dotdot", "calibration"])
def test_compress_never_overwrites_its_inputs(
    run_cli: Callable[..., tuple[int, str, str]], model: Path, calibration: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    out = {"same": str(model), "dotdot": "X/../X", "calibration": str(calibration.parent)}[how]
    args = ("--prune-heads", "0.25", "--calibration", str(calibration), "--quiet")
    code, _, err = run_cli("compress", "--model", str(model), "--out", out, "--force", *args)
    assert_one_line(code, err, "--calibration" if how == "calibration" else "--model")
    assert snapshot(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["X"]


def test_export_to_an_unwritable_place_is_one_line(run_cli: Callable[..., tuple[int, str, str]], tiny_bert: Path) -> None:
    code, _, err = run_cli("export", "--target", "onnx", "--model", str(tiny_bert), "--out", "/proc/x", "--seq-len", "16")
    assert_one_line(code, err, "not writable")


def test_export_of_a_nan_model_fails_and_writes_nothing(run_cli: Callable[..., tuple[int, str, str]], model: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(model / "model.safetensors")
    name = next(k for k in weights if k.endswith("attention.self.query.weight"))
    weights[name][0, 0] = float("nan")
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    out = tmp_path / "nan-onnx"
    code, _, err = run_cli("export", "--target", "onnx", "--model", str(model), "--out", str(out), "--seq-len", "16")
    assert code == 1 and "NaN/inf" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X"]


# ----------------------------------------------------------------------------------------- bench


REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "edgebert.cli", *args]


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}


def test_bench_never_overwrites_an_item(run_cli: Callable[..., tuple[int, str, str]], model: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    code, _, err = run_cli("bench", str(model), "--out", str(model), "--force", "--in-process", "--repeats", "1")
    assert_one_line(code, err, "is the ITEM")
    code, _, err = run_cli("bench", str(model), "--out", str(tmp_path), "--force", "--in-process", "--repeats", "1")
    assert_one_line(code, err, "contains the ITEM")
    assert snapshot(tmp_path) == before


def test_bench_never_runs_a_tokenizers_own_code(model: Path, tmp_path: Path) -> None:
    import json
    import subprocess

    marker = tmp_path / "MARKER"
    (model / "evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import BertTokenizerFast as EvilTokenizer\n"
    )
    config = json.loads((model / "tokenizer_config.json").read_text())
    config.update(tokenizer_class="EvilTokenizer", auto_map={"AutoTokenizer": ["evil.EvilTokenizer", "evil.EvilTokenizer"]})
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    out = tmp_path / "report"
    args = _cli("bench", str(model), "--out", str(out), "--repeats", "1", "--warmup", "0", "--seq-len", "8")
    done = subprocess.run(args, input="y\n" * 20, capture_output=True, text=True, cwd=REPO, env=_env(), timeout=300)
    assert not marker.exists(), done.stderr
    report = json.loads((out / "report.json").read_text())
    assert done.returncode == 1 and report["items"][0]["status"] == "failed", done.stderr


def test_bench_workers_die_with_a_killed_bench(tiny_bert: Path, tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    import psutil

    args = _cli("bench", str(tiny_bert), "--out", str(tmp_path / "r"), "--repeats", "10000000", "--warmup", "0", "--seq-len", "8")
    bench = subprocess.Popen(args, cwd=REPO, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    workers: list[psutil.Process] = []
    try:
        assert bench.stderr is not None
        for line in bench.stderr:  # the worker has loaded the model and is timing it: silent for a long while
            if "loaded in" in line:
                break
        workers = psutil.Process(bench.pid).children()
        assert workers, "no bench worker started"
        time.sleep(0.5)
        bench.send_signal(signal.SIGKILL)
        bench.wait()
        gone, alive = psutil.wait_procs(workers, timeout=10)
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not alive, f"bench workers outlived the killed bench: {[p.pid for p in alive]}"
    finally:
        for worker in workers:
            if worker.is_running():
                worker.kill()
