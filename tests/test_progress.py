"""Long work is never silent: a bar with an estimate on a terminal, a line per tenth with counts in a log."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from edgebert.progress import Track


def test_a_log_gets_a_line_at_each_tenth_with_counts_and_an_estimate() -> None:
    out = io.StringIO()
    with Track("teacher outputs", 1000, "sequences", console=Console(file=out, force_terminal=False, width=200)) as track:
        for _ in range(1000):
            track.advance()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10, lines
    assert lines[0].startswith("teacher outputs: 100/1,000 sequences (10 %), ") and "left" in lines[0]
    assert lines[-1].startswith("teacher outputs: 1,000/1,000 sequences (100 %), ") and "left" not in lines[-1]


def test_a_terminal_gets_a_bar_and_one_closing_line() -> None:
    out = io.StringIO()
    with Track("calibration", 50, "batches", console=Console(file=out, force_terminal=True, width=120)) as track:
        for _ in range(50):
            track.advance()
    text = out.getvalue()
    assert text.count("calibration: 50/50 batches (100 %)") == 1 and "(10 %)" not in text


def test_a_resumed_count_estimates_from_what_this_run_did() -> None:
    track = Track("step", 100, quiet=True)
    track.restart(50)
    assert track.crossed(55) is None  # no tenth crossed since 50
    line = track.crossed(60)
    assert line is not None and line.startswith("step: 60/100 (60 %)") and "about" in line


def test_distillation_in_a_log_reports_steps_not_a_bar(tiny_bert: Path, tmp_path: Path, run_cli: Any) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"the quick brown fox {i} jumps over the lazy dog" for i in range(30)) + "\n")
    code, _, err = run_cli(
        "distill", "--teacher", str(tiny_bert), "--corpus", str(corpus), "--out", str(tmp_path / "s"), "--steps", "10",
        "--student-layers", "1", "--batch-size", "4", "--seq-len", "16", "--cache-dir", str(tmp_path / "cache"),
    )
    assert code == 0, err
    steps = [line for line in err.splitlines() if line.startswith("[distill] step: ")]
    assert len(steps) == 10 and steps[-1].startswith("[distill] step: 10/10 (100 %)") and ", loss " in steps[-1], err
    assert "it/s]" not in err  # no tqdm bar in a log
    assert "[distill] student: distilbert-shaped bert, 1 layers" in err  # the shape and the family it is built in


def test_distillation_prints_its_own_lines_only(tiny_bert: Path, tmp_path: Path) -> None:
    """No TensorFlow, CUDA or absl start-up lines from a PyTorch distillation: every stderr line is edgebert's."""
    import os
    import subprocess
    import sys

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"the quick brown fox {i} jumps over the lazy dog" for i in range(30)) + "\n")
    root = Path(__file__).resolve().parents[1]
    args = [sys.executable, "-m", "edgebert.cli", "distill", "--teacher", str(tiny_bert), "--corpus", str(corpus),
            "--out", str(tmp_path / "s"), "--steps", "4", "--student-layers", "1", "--batch-size", "4", "--seq-len", "16",
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, timeout=600)
    assert done.returncode == 0, done.stderr
    foreign = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("[distill] ")]
    assert not foreign, foreign


def test_library_chatter_is_kept_back_and_shown_when_the_block_fails(capfd: Any) -> None:
    import os

    from edgebert.progress import library_chatter_kept_back

    with library_chatter_kept_back():
        os.write(2, b"I0000 port.cc:153] oneDNN custom operations are on\n")
    assert capfd.readouterr().err == ""
    with pytest.raises(RuntimeError), library_chatter_kept_back():
        os.write(2, b"converter: the reason it failed\n")
        raise RuntimeError("boom")
    assert "the reason it failed" in capfd.readouterr().err


@pytest.mark.parametrize(("target", "quantize"), [("tflite", "int8"), ("executorch", "int8")])
def test_an_export_prints_its_steps_and_nothing_else(tiny_bert: Path, tmp_path: Path, target: str, quantize: str) -> None:
    """TensorFlow's, LiteRT's and ExecuTorch's start-up logs, converter bars and library warnings are kept back."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    args = [sys.executable, "-m", "edgebert.cli", "export", "--model", str(tiny_bert), "--target", target, "--quantize", quantize,
            "--out", str(tmp_path / "out"), "--seq-len", "16"]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    # the four steps, then the one line an integer export owes when its ARM64 kernels were not checked (off in tests)
    assert len(lines) == 5 and all(line.startswith(f"[{i}/4] ") for i, line in enumerate(lines[:4], 1)), done.stderr
    assert lines[4].startswith("note: ARM64 kernels not checked: "), done.stderr
