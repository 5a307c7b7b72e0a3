"""The ARM64 kernel paths of an export (edgebert.targets.arm64_paths): an int8 ONNX and TFLite export of a tiny BERT
checked by onnxruntime's and LiteRT's aarch64 builds on each emulated CPU model, recorded in the manifest beside the
host's paths; a machine without the emulator (or without ExecuTorch's aarch64 runtime) says in one line that the
ARM64 kernels were not checked. ExecuTorch's int8 on ARM64 is checked in tests/test_export_executorch.py (one export).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebert.config import ARM64_CPUS
from edgebert.export import export

from test_arm64 import installed  # noqa: F401  (the fixture: the emulator ./install.sh installs)

TEXTS = 3


@pytest.fixture
def arm64_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEBERT_ARM64_TEXTS", str(TEXTS))


def check_arm64(parity: dict, expected_paths: list[str]) -> None:
    """`parity` (a manifest's) ran `expected_paths` on TEXTS texts per check, each at the threshold, recorded."""
    record = parity["arm64"]
    assert record["checked"] and record["cpus"] == list(ARM64_CPUS) and record["texts_per_check"] == TEXTS
    assert record["emulator"].startswith("qemu-aarch64 ") and set(record["paths"]) == set(expected_paths)
    for name in expected_paths:
        path = parity["kernel_paths"][name]
        assert path["texts_per_check"] == TEXTS and path["min_cosine"] >= parity["threshold"]
        host = next(iter(parity["kernel_paths"].values()))
        checks = {k for k, v in host.items() if isinstance(v, dict)} - {"padded_batch"}  # the sample leaves the batch out
        assert {k: v["sentences"] for k, v in path.items() if isinstance(v, dict)} == dict.fromkeys(checks, TEXTS)
        assert parity["min_cosine"] <= path["min_cosine"]  # the worst path decides
    features = {name: record["paths"][name]["features"].split() for name in expected_paths}
    assert "asimddp" not in features["arm64-cortex-a53"] and "i8mm" in features["arm64-cortex-a710"]


@pytest.mark.usefixtures("installed", "arm64_on")
def test_int8_onnx_is_checked_on_every_arm64_cpu_model(tiny_bert: Path, tmp_path: Path) -> None:
    manifest = export("onnx", model=tiny_bert, out=tmp_path / "onnx", quantize="int8", seq_len=32, quiet=True).manifest
    paths = [f"arm64-{cpu}" for cpu in ARM64_CPUS]
    assert list(manifest["parity"]["kernel_paths"]) == ["host", "u8s8-saturating", *paths]
    check_arm64(manifest["parity"], paths)


@pytest.mark.usefixtures("installed", "arm64_on")
def test_int8_tflite_is_checked_on_xnnpack_and_the_builtin_kernels_of_arm64(tiny_bert: Path, tmp_path: Path) -> None:
    manifest = export("tflite", model=tiny_bert, out=tmp_path / "tflite", quantize="int8", seq_len=[16, 32], quiet=True).manifest
    paths = [f"arm64-{cpu}" for cpu in ARM64_CPUS] + ["arm64-cortex-a76-builtin"]
    assert list(manifest["parity"]["kernel_paths"]) == ["xnnpack", "builtin", *paths]
    check_arm64(manifest["parity"], paths)


@pytest.mark.usefixtures("arm64_on")
def test_without_the_emulator_the_export_says_arm64_was_not_checked(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EDGEBERT_ARM64_HOME", str(tmp_path / "nothing"))
    report = export("onnx", model=tiny_bert, out=tmp_path / "onnx", quantize="int8", seq_len=32)
    record = report.manifest["parity"]["arm64"]
    assert record["checked"] is False and "install_arm64.sh" in record["reason"]
    assert set(report.manifest["parity"]["kernel_paths"]) == {"host", "u8s8-saturating"}
    assert "ARM64 kernels not checked: " in capsys.readouterr().err


@pytest.mark.usefixtures("installed", "arm64_on")
def test_float_recipes_have_no_arm64_record_and_executorch_without_its_runtime_says_why(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgebert import arm64
    from edgebert.targets import get_exporter

    manifest = export("onnx", model=tiny_bert, out=tmp_path / "onnx", seq_len=32, quiet=True).manifest
    assert "arm64" not in manifest["parity"]
    executorch = get_exporter("executorch")
    assert executorch.arm64_unchecked({"quantization": "none"}) is None
    monkeypatch.setattr(arm64, "executorch_library", lambda: tmp_path / "nothing" / "lib" / "libedgebert_et.so")
    reason = executorch.arm64_unchecked({"quantization": "int8"})
    assert reason.startswith("no ExecuTorch aarch64 runtime in ") and "install_arm64.sh" in reason


def test_a_bad_text_count_is_one_line(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgebert.errors import UserError

    monkeypatch.setenv("EDGEBERT_ARM64_TEXTS", "many")
    with pytest.raises(UserError, match="EDGEBERT_ARM64_TEXTS='many' is not a count of texts"):
        export("onnx", model=tiny_bert, out=tmp_path / "onnx", quantize="int8", seq_len=32, quiet=True)
    assert not (tmp_path / "onnx").exists()
