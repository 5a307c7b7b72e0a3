"""The ARM64 kernel path (edgebert.arm64): qemu-aarch64 running the aarch64 onnxruntime / LiteRT wheels.

The tests that need the emulator skip, naming the reason, when scripts/install_arm64.sh has not installed it; the
self-test's verdict is cached by the install, so the whole file takes a couple of emulated runs (~10-20 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from edgebert import arm64

CPU = "cortex-a76"  # the emulated CPU model of the single-run tests (dot product, no i8mm: most phones)


PYTHON_ONLY_MARKER = Path(sys.prefix) / "edgebert-python-only"


def require_installed(executorch: bool = False) -> None:
    """The emulator ./install.sh installs (and `executorch`: ExecuTorch's aarch64 runtime); skipped only in a
    --python-only environment (no root for debootstrap or the cross compiler)."""
    problem = arm64.install_problem() or (arm64.executorch_problem() if executorch else None)
    if problem and PYTHON_ONLY_MARKER.exists():
        pytest.skip(f"ARM64 path not installed (./install.sh --python-only): {problem}")
    assert problem is None, f"ARM64 path not installed: {problem}"


@pytest.fixture(scope="module")
def installed() -> None:
    require_installed()


def test_without_an_install_available_names_the_missing_emulator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGEBERT_ARM64_HOME", str(tmp_path))
    monkeypatch.delenv("EDGEBERT_ARM64_QEMU", raising=False)
    reason = arm64.available()
    assert reason is not None and reason.startswith("no emulator:") and "install_arm64.sh" in reason


def test_compare_accepts_equal_outputs_and_names_each_difference() -> None:
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    floats = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    expected = {"job/i": ints, "job/f": floats}
    assert arm64.compare(expected, {"job/i": ints.copy(), "job/f": floats * np.float32(1 + 1e-7)}) == []
    off_by_one = ints.copy()
    off_by_one[1, 2] += 1
    problems = arm64.compare(expected, {"job/i": off_by_one, "job/f": floats * np.float32(1.001)})
    assert problems == ["job/i: 1 of 12 integers differ (max |diff| 1)", "job/f: relative error 0.001 > 1e-05"]
    assert arm64.compare(expected, {"job/i": ints.astype(np.int64)}) == [
        "job/i: int64[3, 4], expected int32[3, 4]",
        "job/f: no output",
    ]


def test_self_test_passes_on_every_cpu_model(installed: None) -> None:
    verdict = arm64.self_test()
    assert set(verdict["cpus"]) == set(arm64.CPU_MODELS)
    failed = {cpu: result["problems"] for cpu, result in verdict["cpus"].items() if not result["ok"]}
    assert not failed, f"the emulator {verdict['emulator']} miscomputes: {failed}"
    assert arm64.available() is None
    assert arm64.version_tuple(arm64.emulator_version()) >= arm64.QEMU_MIN
    # each model really is the CPU it stands for: dot product from cortex-a76 on, i8mm and SVE from cortex-a710 on
    features = {cpu: set(result["features"].split()) for cpu, result in verdict["cpus"].items()}
    assert "asimddp" not in features["cortex-a53"] and "asimddp" in features["cortex-a76"]
    assert "i8mm" not in features["cortex-a76"]
    assert {"i8mm", "sve2"} <= features["cortex-a710"] and {"i8mm", "sve2"} <= features["max"]


def test_a_wrong_known_answer_fails_the_self_test(installed: None) -> None:
    expected = dict(arm64.selftest_case()["expected"])
    wrong = expected["onnxruntime/y_u8s8"].copy()
    wrong[5, 7] += 1
    expected["onnxruntime/y_u8s8"] = wrong
    verdict = arm64.self_test([CPU], expected=expected)
    assert not verdict["ok"] and not verdict["cached"]
    assert verdict["cpus"][CPU]["problems"] == ["onnxruntime/y_u8s8: 1 of 98304 integers differ (max |diff| 1)"]
    assert arm64.self_test([CPU])["ok"]  # the cached verdict of the true known answers is untouched


def _tiny_onnx(path: Path) -> None:
    """A tiny fp32 encoder-like graph over int64 token ids of any length: embedding Gather, MatMul + bias, Tanh,
    softmax over the tokens, and a masked mean."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    weights = {
        "embedding": rng.standard_normal((50, 16)).astype(np.float32),
        "w": (rng.standard_normal((16, 24)) / 4).astype(np.float32),
        "b": rng.standard_normal(24).astype(np.float32),
    }
    nodes = [
        helper.make_node("Gather", ["embedding", "input_ids"], ["e"]),
        helper.make_node("MatMul", ["e", "w"], ["h0"]),
        helper.make_node("Add", ["h0", "b"], ["h1"]),
        helper.make_node("Tanh", ["h1"], ["hidden"]),
        helper.make_node("Softmax", ["hidden"], ["attention"], axis=1),
        helper.make_node("Cast", ["attention_mask"], ["m0"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["m0", "axes"], ["m"]),
        helper.make_node("Mul", ["hidden", "m"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axes1"], ["pooled"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [
            helper.make_tensor_value_info("attention", TensorProto.FLOAT, ["batch", "sequence", 24]),
            helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", 24]),
        ],
        [numpy_helper.from_array(v, n) for n, v in weights.items()]
        + [numpy_helper.from_array(np.array([a], np.int64), name) for name, a in (("axes", 2), ("axes1", 1))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def test_the_child_reproduces_a_tiny_onnx_models_fp32_outputs(installed: None, tmp_path: Path) -> None:
    import onnxruntime as ort

    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path)
    rng = np.random.default_rng(3)
    rows = []
    for length in (3, 9, 17):  # rows of different lengths, int32 ids (cast to the model's int64 by the child)
        ids = rng.integers(0, 50, (1, length)).astype(np.int32)
        mask = np.ones((1, length), np.int32)
        mask[0, length - 1] = 0
        rows.append({"input_ids": ids, "attention_mask": mask})
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    host = []
    for row in rows:
        values = session.run(None, {name: value.astype(np.int64) for name, value in row.items()})
        host.append(dict(zip(["attention", "pooled"], values)))

    run = arm64.run_jobs([arm64.Job(path, "onnxruntime", rows)], CPU, timeout=120)
    (job,) = run.jobs
    assert run.report["machine"] == "aarch64" and job.version == ort.__version__
    assert len(job.outputs) == len(rows) and len(job.row_s) == len(rows)
    for emulated, reference in zip(job.outputs, host):
        assert set(emulated) == {"attention", "pooled"}
        assert arm64.compare(reference, emulated) == []


def test_a_failing_child_raises_its_error_line(installed: None, tmp_path: Path) -> None:
    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path)
    with pytest.raises(arm64.ChildError, match=r"no value for the model's inputs \['attention_mask'\]"):
        arm64.run_jobs([arm64.Job(path, "onnxruntime", [{"input_ids": np.zeros((1, 2), np.int64)}])], CPU, timeout=120)
