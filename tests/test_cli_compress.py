"""`edgebert compress` from the command line: exit 0 with a JSON summary, bad input one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import WORDS

from edgebert import cli


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calib") / "calib.txt"
    path.write_text("\n".join(" ".join(WORDS[i : i + 9]) for i in range(0, len(WORDS) - 9, 3)) + "\n")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(args))
    except SystemExit as exc:  # argparse errors
        code = int(exc.code)
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


def assert_one_line_error(code: int, err: str, fragment: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert fragment in lines[0] and "Traceback" not in err


def test_compress_writes_a_smaller_model_and_prints_a_summary(
    capsys: pytest.CaptureFixture[str], tiny_bert: Path, calibration: Path, tmp_path: Path
) -> None:
    out = tmp_path / "small"
    code, stdout, err = run_cli(
        capsys, "compress", "--model", str(tiny_bert), "--out", str(out), "--prune-heads", "0.25",
        "--prune-ffn", "0.5", "--calibration", str(calibration), "--seq-len", "32",
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["intermediate_size"] == 32
    assert sum(summary["heads_per_layer"]) == 6
    assert summary["encoder_parameters"]["after"] < summary["encoder_parameters"]["before"]
    assert (out / "edgebert.json").exists() and (out / "model.safetensors").exists()
    assert "pruned model written" in err


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--prune-heads", "1.5"], "--prune-heads must be a fraction in [0, 1)"),
        (["--prune-ffn", "-0.2"], "--prune-ffn must be a fraction in [0, 1)"),
        (["--prune-heads", "0.5"], "pass --calibration"),
        (["--heads-to-prune", '{"0": [0, 1, 2, 3]}'], "would remove all 4 heads of layer 0"),
        (["--heads-to-prune", "{oops"], "not valid JSON"),
        (["--prune-ffn", "0.5", "--ffn-scope", "global"], "--ffn-scope global is not supported"),
        ([], "nothing to prune"),
        (["--prune-heads", "abc"], "invalid float value"),
        (["--prune-heads", "nan"], "--prune-heads must be a fraction in [0, 1)"),
        (["--prune-heads", "0.5", "--calibration-samples", "-1"], "--calibration-samples must be at least 1"),
        (["--prune-heads", "0.5", "--seq-len", "1"], "--seq-len must be at least 2"),
        (["--prune-heads", "0.5", "--batch-size", "0"], "--batch-size must be at least 1"),
        (["--prune-heads", "0.5", "--seed", "-3"], "--seed must be at least 0"),
        (["--prune-heads", "0.5", "--heal-steps", "5", "--heal-corpus", "TEXT", "--heal-lr", "nan"], "--heal-lr must be a finite number"),
        (["--prune-heads", "0.5", "--heal-steps", "-5"], "--heal-steps must be at least 0"),
        (["--prune-heads", "0.5", "--calibration", "BINARY"], "is not UTF-8 text"),
        (["--prune-heads", "0.5", "--calibration", "TEXT", "--trim-vocab", "BINARY"], "is not UTF-8 text"),
        (["--prune-heads", "0.5", "--calibration", "TEXT", "--heal-steps", "2", "--heal-corpus", "BINARY"], "is not UTF-8 text"),
        (["--trim-vocab", "TEXT", "--vocab-min-count", "0"], "min_count must be an integer of at least 1"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(
    capsys: pytest.CaptureFixture[str], tiny_bert: Path, tmp_path: Path, extra: list[str], fragment: str
) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "binary.txt").write_bytes(bytes(range(256)) * 16)
    (inputs / "text.txt").write_text("the quick brown fox\nhello world\n")
    subs = {"BINARY": str(inputs / "binary.txt"), "TEXT": str(inputs / "text.txt")}
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "compress", "--model", str(tiny_bert), "--out", str(out), *[subs.get(a, a) for a in extra])
    assert_one_line_error(code, err, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs"]


def test_existing_out_without_force_is_exit_2(capsys: pytest.CaptureFixture[str], tiny_bert: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "x").write_text("x")
    code, _, err = run_cli(capsys, "compress", "--model", str(tiny_bert), "--out", str(out), "--heads-to-prune", '{"0": [0]}')
    assert_one_line_error(code, err, "pass --force")
    code, _, err = run_cli(
        capsys, "compress", "--model", str(tiny_bert), "--out", str(out), "--heads-to-prune", '{"0": [0]}', "--force", "--quiet"
    )
    assert code == 0 and err == ""


def test_missing_model_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "compress", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "o"), "--heads-to-prune", "{}")
    assert_one_line_error(code, err, "does not exist")


def test_help_lists_the_pruning_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run_cli(capsys, "compress", "--help")
    assert code == 0
    for flag in ("--prune-heads", "--prune-ffn", "--heads-to-prune", "--calibration", "--head-scope"):
        assert flag in stdout


def test_mlm_importance_without_a_head_is_exit_2(capsys: pytest.CaptureFixture[str], tiny_bert: Path, calibration: Path, tmp_path: Path) -> None:
    code, _, err = run_cli(
        capsys, "compress", "--model", str(tiny_bert), "--out", str(tmp_path / "o"), "--prune-heads", "0.25",
        "--calibration", str(calibration), "--importance", "mlm",
    )  # fmt: skip
    assert_one_line_error(code, err, "has none")


def test_seq_len_beyond_the_position_limit_is_exit_2(capsys: pytest.CaptureFixture[str], tiny_bert: Path, tmp_path: Path) -> None:
    import json as _json

    limit = _json.loads((tiny_bert / "config.json").read_text())["max_position_embeddings"]
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "compress", "--model", str(tiny_bert), "--out", str(out), "--heads-to-prune", '{"0": [1]}', "--seq-len", str(limit + 1))
    assert_one_line_error(code, err, "position limit")
    assert not out.exists()
