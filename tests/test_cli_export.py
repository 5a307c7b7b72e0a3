"""`edgebert export` from the command line: bad input is one line and exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgebert.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse errors
        code = int(exc.code)
    err = capsys.readouterr().err.strip()
    return code, err


def assert_one_line_error(code: int, err: str, fragment: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert fragment in lines[0] and "Traceback" not in err


@pytest.fixture()
def corrupt_model(tiny_bert: Path, tmp_path: Path) -> Path:
    d = tmp_path / "corrupt"
    shutil.copytree(tiny_bert, d)
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[:100])
    return d


@pytest.fixture()
def no_tokenizer_model(tiny_bert: Path, tmp_path: Path) -> Path:
    d = tmp_path / "notok"
    shutil.copytree(tiny_bert, d)
    for name in ("vocab.txt", "tokenizer.json"):
        (d / name).unlink()
    return d


@pytest.fixture()
def gpt2_model(tiny_bert: Path, tmp_path: Path) -> Path:
    d = tmp_path / "gpt2"
    shutil.copytree(tiny_bert, d)
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    return d


def test_unknown_target(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    code, err = run_cli(capsys, "export", "--target", "coreml", "--model", str(tiny_bert), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "unknown target 'coreml'")
    assert not (tmp_path / "o").exists()


def test_quantization_not_offered(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    args = ("export", "--target", "onnx", "--quantize", "uint8", "--model", str(tiny_bert), "--out", str(tmp_path / "o"))
    code, err = run_cli(capsys, *args)
    assert_one_line_error(code, err, "not offered by target onnx")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("model_fixture", "fragment"),
    [
        ("missing", "does not exist"),
        ("not_a_model", "no config.json"),
        ("corrupt_model", "truncated or corrupt"),
        ("no_tokenizer_model", "no tokenizer"),
        ("gpt2_model", "supported: bert"),
    ],
)
def test_bad_models(
    capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest, tmp_path: Path, model_fixture: str, fragment: str
) -> None:
    if model_fixture == "missing":
        model = tmp_path / "missing"
    elif model_fixture == "not_a_model":
        model = tmp_path / "empty"
        model.mkdir()
    else:
        model = request.getfixturevalue(model_fixture)
    out = tmp_path / "o"
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(model), "--out", str(out))
    assert_one_line_error(code, err, fragment)
    assert not out.exists()


@pytest.mark.parametrize(
    ("seq_len", "fragment"), [("0", "at least 2"), ("-3", "at least 2"), ("1", "[CLS] and [SEP]"), ("129", "position limit of 128")]
)
def test_bad_seq_len(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path, seq_len: str, fragment: str) -> None:
    out = tmp_path / "o"
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(out), "--seq-len", seq_len)
    assert_one_line_error(code, err, fragment)
    assert not out.exists()


def test_out_not_empty_needs_force(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(out))
    assert_one_line_error(code, err, "--force")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    code, _ = run_cli(capsys, "export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(out), "--force", "--seq-len", "32")
    assert code == 0 and (out / "model.onnx").exists() and not (out / "keep.txt").exists()


def test_out_not_writable(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(blocker / "o"))
    assert_one_line_error(code, err, "not writable")


def test_failed_parity_exits_1_and_leaves_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_bert: Path
) -> None:
    from edgebert.targets.onnx import exporter as onnx_target

    original = onnx_target.OnnxRunner.run

    def drifting(self: onnx_target.OnnxRunner, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = original(self, inputs)
        noise = np.random.default_rng(0).normal(size=outputs["sentence_embedding"].shape).astype(np.float32)
        return {**outputs, "sentence_embedding": outputs["sentence_embedding"] + 0.5 * noise}

    monkeypatch.setattr(onnx_target.OnnxRunner, "run", drifting)
    out = tmp_path / "o"
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(out), "--seq-len", "32")
    assert code == 1 and "drifts from PyTorch" in err
    assert list(tmp_path.iterdir()) == []


def test_success_prints_summary(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    out = tmp_path / "o"
    code = main(["export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(out), "--seq-len", "32"])
    captured = capsys.readouterr()
    assert code == 0
    assert "model.onnx" in captured.out and "min cosine" in captured.out
    assert "[4/4] verifying" in captured.err


def test_help_is_fast_and_light() -> None:
    code = (
        "import sys, edgebert.cli as c\n"
        "try:\n    c.main(['export', '--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'tensorflow', 'onnxruntime', 'transformers') if m in sys.modules]\n"
        "print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("value", ["nan", "-5", "0", "1.5", "inf"])
def test_bad_min_cosine(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path, value: str) -> None:
    out = tmp_path / "o"
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(out), "--min-cosine", value)
    assert_one_line_error(code, err, "--min-cosine must be a finite number in (0, 1]")
    assert not out.exists()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"seq_len": "128"}, "--seq-len must be an integer"),
        ({"seq_len": 32.0}, "--seq-len must be an integer"),
        ({"out": 123}, "--out must be a path"),
        ({"min_cosine": "high"}, "--min-cosine must be a number"),
        ({"calibration_samples": "5"}, "--calibration-samples must be an integer"),
        ({"model": 7}, "--model must be"),
        ({"tfjs_batched_attention_max_len": -1}, "--tfjs-batched-attention-max-len must be at least 0"),
        ({"tfjs_batched_attention_max_len": "32"}, "--tfjs-batched-attention-max-len must be an integer"),
    ],
)
def test_python_api_wrong_types_are_user_errors(tmp_path: Path, tiny_bert: Path, kwargs: dict[str, object], fragment: str) -> None:
    import edgebert
    from edgebert.errors import UserError

    args: dict[str, object] = {"model": str(tiny_bert), "out": str(tmp_path / "o"), **kwargs}
    with pytest.raises(UserError, match=fragment.replace("(", r"\(").replace("[", r"\[")):
        edgebert.export("onnx", **args)
    with pytest.raises(UserError, match="--seq-len|--out|--min-cosine|--calibration|--model|--tfjs"):  # again: still the function
        edgebert.export("onnx", **args)
    assert not (tmp_path / "o").exists()


def test_binary_calibration_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    calibration = tmp_path / "calib.txt"
    calibration.write_bytes(bytes(range(256)) * 8)
    out = tmp_path / "o"
    args = ("export", "--target", "onnx", "--quantize", "int8-static", "--calibration", str(calibration))
    code, err = run_cli(capsys, *args, "--model", str(tiny_bert), "--out", str(out))
    assert_one_line_error(code, err, f"--calibration {calibration} is not UTF-8 text")
    assert not out.exists()


@pytest.mark.parametrize("body", ["[1, 2]", '"bert"', "3", "null"])
def test_config_json_not_an_object(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path, body: str) -> None:
    model = tmp_path / "m"
    shutil.copytree(tiny_bert, model)
    (model / "config.json").write_text(body)
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(model), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "must hold a JSON object")
    assert not (tmp_path / "o").exists()


def test_config_json_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    model = tmp_path / "m"
    shutil.copytree(tiny_bert, model)
    (model / "config.json").write_bytes(b'{"model_type": "\xff\xfe"}')
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(model), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "not UTF-8")


def test_tokenizer_larger_than_the_embedding_table(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_bert: Path) -> None:
    model = tmp_path / "m"
    shutil.copytree(tiny_bert, model)
    (model / "tokenizer.json").unlink()
    with open(model / "vocab.txt", "a") as fh:
        fh.write("\n".join(f"extra{i}" for i in range(20)) + "\n")
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(model), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "embedding table only")
    assert not (tmp_path / "o").exists()
