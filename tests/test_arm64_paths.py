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


def test_every_arm64_child_of_an_export_runs_in_one_pool_the_slow_one_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """LiteRT's four ARM64 paths (XNNPACK on three CPU models, the built-in kernels on one) share one batch: the first
    path asked starts all four children, the built-in kernels' first (the slowest), as many at once as the host has
    cores; the other paths take their results without another child."""
    import threading
    import time
    from types import SimpleNamespace

    import numpy as np

    from edgebert import arm64, cpu
    from edgebert.targets import arm64_paths

    started: list[tuple[str, str]] = []
    running, most = [0], [0]
    lock = threading.Lock()

    def run_jobs(jobs: list, model: str) -> SimpleNamespace:
        with lock:
            started.append((model, jobs[0].kernels))
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        outputs = [{"sentence_embedding": np.full((1, 4), float(len(started)), np.float32)} for _ in jobs[0].rows]
        return SimpleNamespace(jobs=[SimpleNamespace(outputs=outputs)], wall_s=0.05, features="fp asimd")

    monkeypatch.setattr(arm64, "run_jobs", run_jobs)
    monkeypatch.setattr(arm64, "emulator_version", lambda: "10.0.13")
    monkeypatch.setattr(cpu, "cores", lambda: 2)
    paths = arm64_paths.tflite_paths(Path("model.tflite"), {8: "seq_8"}, {8: ["input_ids", "attention_mask"]}, "right")
    feed = {"input_ids": np.ones((2, 5), np.int64), "attention_mask": np.ones((2, 5), np.int64)}
    for name, path in paths.items():
        out = path.runner.run_many([feed])[0]
        assert out["sentence_embedding"].shape == (2, 4), name
    assert started[0] == ("cortex-a76", "builtin") and len(started) == 4 and most[0] == 2
    assert sorted(started[1:]) == [(model, "xnnpack") for model in sorted(ARM64_CPUS)]
    meta = next(iter(paths.values())).runner.batch.meta
    assert set(meta) == set(paths) and all(m["features"] == "fp asimd" for m in meta.values())
