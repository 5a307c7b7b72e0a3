"""The installed CLI as a user runs it (a subprocess): bad input prints exactly one line on stderr, no library noise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_edgebert(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "edgebert.cli", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


@pytest.fixture()
def corrupt_model(tiny_bert: Path, tmp_path: Path) -> Path:
    """Loading its weights imports transformers' quantizers (and so torchao) before the error is raised."""
    d = tmp_path / "corrupt"
    shutil.copytree(tiny_bert, d)
    (d / "model.safetensors").write_bytes((tiny_bert / "model.safetensors").read_bytes()[:100])
    return d


@pytest.fixture()
def big_tokenizer_model(tiny_bert: Path, tmp_path: Path) -> Path:
    """A tokenizer with 20 more tokens than the embedding table has rows."""
    d = tmp_path / "big-tokenizer"
    shutil.copytree(tiny_bert, d)
    (d / "tokenizer.json").unlink()
    with open(d / "vocab.txt", "a") as fh:
        fh.write("\n".join(f"extra{i}" for i in range(20)) + "\n")
    return d


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["export", "--target", "onnx", "--model", "/nonexistent"], "does not exist"),
        (["export", "--target", "onnx", "--model", "CORRUPT", "--out", "OUT"], "truncated or corrupt"),
        (["compress", "--model", "BIG", "--out", "OUT", "--heads-to-prune", '{"0": [1]}'], "embedding table only"),
        (["distill", "--corpus", "edgebert-no-such/corpus", "--teacher", "TINY", "--out", "OUT"], "could not load dataset"),
    ],
)
def test_bad_input_is_exactly_one_line_on_stderr(
    argv: list[str], fragment: str, corrupt_model: Path, big_tokenizer_model: Path, tiny_bert: Path, tmp_path: Path
) -> None:
    subs = {"CORRUPT": str(corrupt_model), "BIG": str(big_tokenizer_model), "TINY": str(tiny_bert), "OUT": str(tmp_path / "out")}
    result = run_edgebert(*[subs.get(a, a) for a in argv])
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("edgebert: error: ") and fragment in lines[0]
    assert not (tmp_path / "out").exists()
