"""The emulated non-VNNI x86 int8 kernel (edgebert/targets/onnx/kernels.py): exact against numpy, and what it catches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebert.targets.onnx.kernels import emulate_u8s8_saturation, has_u8s8_products, saturation_proof, widest_pair

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def saturating_product(a: np.ndarray, b: np.ndarray, a_zp: int) -> np.ndarray:
    """What `vpmaddubsw` + `vpmaddwd` compute: pairs of K summed in saturating int16, then zero points."""
    a32, b32 = a.astype(np.int64), b.astype(np.int64)
    k = a.shape[-1]
    pairs = a32[..., : k - k % 2, None] * b32[None, : k - k % 2]
    pairs = pairs.reshape(*a.shape[:-1], (k - k % 2) // 2, 2, b.shape[1]).sum(-2)
    raw = np.clip(pairs, -32768, 32767).sum(-2)
    if k % 2:
        raw += a32[..., -1:] * b32[-1]
    return raw - a_zp * b32.sum(0)


def exact_product(a: np.ndarray, b: np.ndarray, a_zp: int) -> np.ndarray:
    return (a.astype(np.int64) - a_zp) @ b.astype(np.int64)


def matmul_integer_model(b: np.ndarray, a_zp: int) -> object:
    from onnx import TensorProto, helper, numpy_helper

    k, n = b.shape
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "B", "a_zp"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [3, k])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [3, n])],
        [numpy_helper.from_array(b, "B"), numpy_helper.from_array(np.array(a_zp, np.uint8), "a_zp")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def run(model: object, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def saturating_operands(k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Large activations against large same-sign weights, so that many pairs leave int16."""
    rng = np.random.default_rng(seed)
    a = rng.integers(200, 256, size=(3, k), dtype=np.uint8)
    b = rng.integers(90, 128, size=(k, n)).astype(np.int8) * rng.choice([-1, 1], size=(1, n)).astype(np.int8)
    return a, b


@pytest.mark.parametrize("k", [16, 15])
def test_emulated_matmul_integer_saturates_pairs_exactly_as_numpy(k: int) -> None:
    a, b = saturating_operands(k, 8)
    model = matmul_integer_model(b, a_zp=7)
    assert emulate_u8s8_saturation(model) == 1
    onnx.checker.check_model(model)
    got = run(model, {"a": a})
    np.testing.assert_array_equal(got, saturating_product(a, b, 7))
    assert not np.array_equal(got, exact_product(a, b, 7))  # these operands do saturate


def test_a_vocabulary_wide_product_is_emulated_in_chunks_of_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A masked-LM decoder (30k columns) once took 24 GB to emulate and was killed: the pairs of K are now summed a
    chunk at a time (here forced small), with the same saturating result."""
    from edgebert.targets.onnx import kernels

    assert kernels.pairs_per_chunk(30522, 192) == 17  # MiniLM's decoder: 17 of its 192 pairs at a time, 266 MB
    monkeypatch.setattr(kernels, "CHUNK_BYTES", 3 * 128 * 4 * 8)  # 3 pairs a chunk for these 8 columns
    assert kernels.pairs_per_chunk(8, 8) == 3
    a, b = saturating_operands(17, 8, seed=3)
    model = matmul_integer_model(b, a_zp=5)
    emulate_u8s8_saturation(model)
    assert sum(node.op_type == "ReduceSum" for node in model.graph.node) == 3 + 1  # three chunks, one row sum
    np.testing.assert_array_equal(run(model, {"a": a}), saturating_product(a, b, 5))


def test_small_products_are_unchanged_by_the_emulation() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, size=(3, 32), dtype=np.uint8)
    b = rng.integers(-64, 64, size=(32, 4)).astype(np.int8)  # a 7-bit range: 255 * 64 * 2 < 32767
    model = matmul_integer_model(b, a_zp=128)
    emulate_u8s8_saturation(model)
    np.testing.assert_array_equal(run(model, {"a": a}), exact_product(a, b, 128))


def test_host_kernel_matches_its_own_kind() -> None:
    """On this machine's onnxruntime: VNNI / ARM are exact, x86 without VNNI saturates as emulated."""
    from edgebert.cpu import cpu_info

    a, b = saturating_operands(64, 16, seed=2)
    host = run(matmul_integer_model(b, a_zp=0), {"a": a})
    kind = cpu_info()["int8_dot_product"]
    if kind == "saturating-int16":
        np.testing.assert_array_equal(host, saturating_product(a, b, 0))
    elif kind in ("vnni", "arm64"):
        np.testing.assert_array_equal(host, exact_product(a, b, 0))
    else:
        pytest.skip(f"no known int8 kernel kind for this CPU ({kind})")


def qdq_model(w: np.ndarray, w_scale: np.ndarray, x_scale: float, x_zp: int) -> object:
    """x (float) -> QuantizeLinear (uint8) -> DequantizeLinear -> MatMul <- DequantizeLinear <- W (int8, per column)."""
    from onnx import TensorProto, helper, numpy_helper

    k, n = w.shape
    inits = [
        numpy_helper.from_array(w, "W"),
        numpy_helper.from_array(w_scale.astype(np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(n, np.int8), "w_zp"),
        numpy_helper.from_array(np.array(x_scale, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(x_zp, np.uint8), "x_zp"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xd"]),
        helper.make_node("DequantizeLinear", ["W", "w_scale", "w_zp"], ["wd"], axis=1),
        helper.make_node("MatMul", ["xd", "wd"], ["y"], name="mm"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, k])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, n])], inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_emulated_qdq_matmul_is_the_saturating_integer_product_rescaled() -> None:
    a, w = saturating_operands(24, 6, seed=3)
    x_scale, x_zp = 0.05, 3
    x = (a.astype(np.float32) - x_zp) * x_scale  # quantizes back to exactly `a`
    w_scale = np.linspace(0.01, 0.02, 6)
    model = qdq_model(w, w_scale, x_scale, x_zp)
    assert has_u8s8_products(model)
    assert emulate_u8s8_saturation(model) == 1
    expected = saturating_product(a, w, x_zp).astype(np.float32) * np.float32(x_scale) * w_scale.astype(np.float32)
    np.testing.assert_allclose(run(model, {"x": x}), expected, rtol=1e-6)


@pytest.mark.parametrize("k", [64, 63])
def test_seven_bit_weights_are_proved_to_never_saturate(k: int) -> None:
    """The int8 recipe's weights (-64..63): the widest pairs are -32640 and 32130, so no input saturates, and the
    emulated kernel indeed computes the exact product on the worst activations (every one 255)."""
    rng = np.random.default_rng(4)
    b = rng.integers(-64, 64, size=(k, 8)).astype(np.int8)
    b[:2, 0], b[:2, 1] = -64, 63  # the extreme pairs
    model = matmul_integer_model(b, 0)
    assert widest_pair(model) == (-32640, 32130) and saturation_proof(model) is not None
    a = np.full((3, k), 255, np.uint8)
    emulate_u8s8_saturation(model)
    np.testing.assert_array_equal(run(model, {"a": a}), exact_product(a, b, 0))


def test_full_range_weights_have_no_proof_and_are_emulated() -> None:
    """One pair of weights (127, 2) can reach 255 * 129 = 32895 > 32767: no proof, the path is run (emulated)."""
    b = np.zeros((4, 2), np.int8)
    b[0, 0], b[1, 0] = 127, 2
    model = matmul_integer_model(b, 0)
    assert widest_pair(model) == (0, 32895) and saturation_proof(model) is None


def test_the_kernel_paths_of_a_proved_file_run_the_host_alone(tmp_path: Path) -> None:
    from edgebert.targets.base import runnable
    from edgebert.targets.onnx.runner import onnx_kernel_paths

    proved, saturating = tmp_path / "proved.onnx", tmp_path / "saturating.onnx"
    onnx.save(matmul_integer_model(np.full((4, 2), 63, np.int8), 0), str(proved))
    onnx.save(matmul_integer_model(saturating_operands(4, 2)[1], 0), str(saturating))
    paths = onnx_kernel_paths(proved)
    assert set(paths) == {"host", "u8s8-saturating"} and set(runnable(paths)) == {"host"}
    assert paths["u8s8-saturating"].same_as == "host"
    assert set(runnable(onnx_kernel_paths(saturating))) == {"host", "u8s8-saturating"}


def test_u8u8_weights_are_not_products_to_emulate() -> None:
    from onnx import TensorProto, helper, numpy_helper

    b = np.ones((8, 4), np.uint8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "B"], ["y"])],
        "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [3, 4])],
        [numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert not has_u8s8_products(model) and emulate_u8s8_saturation(model) == 0


@pytest.mark.integration
def test_a_full_range_int8_teacher_fails_on_every_machine(packaged_teacher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The previous recipe (8-bit weights) drifts on non-VNNI x86 (0.978 on the parity sentences): the emulated path
    refuses it here too, whatever this machine's own kernels measure."""
    from edgebert.targets.onnx import quantize as onnx_quantize
    from edgebert.errors import VerificationError
    from edgebert.export import export

    from edgebert import cpu

    monkeypatch.setattr(onnx_quantize, "DYNAMIC_REDUCE_RANGE", False)
    with pytest.raises(VerificationError, match="drifts from PyTorch") as failure:
        export("onnx", model=None, out=tmp_path / "o", quantize="int8", quiet=True)
    # The emulated non-VNNI kernels refuse it (no proof: full-range weights); on a non-VNNI host its own kernels are
    # those and drift as much, so the message may name either path there.
    saturating_host = cpu.cpu_info()["int8_dot_product"] == "saturating-int16"
    assert "on kernel path 'u8s8-saturating'" in str(failure.value) or saturating_host
    assert not (tmp_path / "o").exists()
