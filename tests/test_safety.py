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
