"""ONNX export on tiny random BERTs (fast) and on the packaged teacher (integration)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebert.modeldir import SCHEMA_VERSION, read_manifest
from edgebert.export import export
from edgebert.modelio import load_model
from edgebert.parity import encode, torch_reference
from edgebert.targets.base import INT8_FLOAT_ISLANDS


@pytest.mark.parametrize("quantize", ["none", "int8", "fp16"])
def test_tiny_export_verifies_and_describes_itself(tiny_bert: Path, tmp_path: Path, quantize: str) -> None:
    out = tmp_path / f"onnx-{quantize}"
    report = export("onnx", model=tiny_bert, out=out, quantize=quantize, seq_len=64, quiet=True)
    manifest = read_manifest(out)
    assert manifest == report.manifest and manifest["schema_version"] == SCHEMA_VERSION
    assert (manifest["kind"], manifest["step"], manifest["parent"]) == ("export", "export", str(tiny_bert.absolute()))
    assert manifest["recipe"] == {"target": "onnx", "quantize": quantize, "seq_len": 64, "min_cosine": manifest["parity"]["threshold"]}
    assert manifest["target"] == "onnx" and manifest["quantization"] == quantize
    assert [i["name"] for i in manifest["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    assert manifest["inputs"][0] == {"name": "input_ids", "dtype": "int64", "shape": ["batch", "sequence"]}
    assert manifest["files"]["model.onnx"] == (out / "model.onnx").stat().st_size
    assert "tokenizer.json" in manifest["tokenizer_files"] and (out / "tokenizer.json").exists()
    parity = manifest["parity"]
    paths = parity["kernel_paths"]
    assert parity["passed"] and paths["host"]["natural_length"]["sentences"] == 10
    assert parity["min_cosine"] == min(p["min_cosine"] for p in paths.values()) >= parity["threshold"]
    # int8 multiplies uint8 activations by int8 weights: the saturating non-VNNI x86 path is checked too.
    assert set(paths) == ({"host", "u8s8-saturating"} if quantize == "int8" else {"host"})
    if quantize == "int8":  # 7-bit weights: proved to compute the host's integers, so it carries the host's figures
        saturating = paths["u8s8-saturating"]
        assert saturating["same_as"] == "host" and "no u8 x s8 pair can leave int16" in saturating["proof"]
        assert saturating["wide_texts"] == paths["host"]["wide_texts"]
    assert parity["cpu"]["machine"] and "int8_dot_product" in parity["cpu"]


def test_dynamic_axes_accept_other_batch_and_length(tiny_bert: Path, tmp_path: Path) -> None:
    import onnxruntime as ort

    out = tmp_path / "onnx"
    export("onnx", model=tiny_bert, out=out, seq_len=64, quiet=True)
    model = load_model(tiny_bert)
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    for texts in (["hello world"], ["the quick brown fox", "a man plays the guitar on the stage", "why"]):
        inputs = encode(model.tokenizer, texts, 64, pad_to_seq_len=False)
        embedding, hidden = session.run(None, inputs)
        expected = torch_reference(model.embedder, inputs)
        assert hidden.shape == inputs["input_ids"].shape + (32,)
        np.testing.assert_allclose(embedding, expected["sentence_embedding"], atol=1e-5)


def test_int32_ids_are_cast_once_and_compute_the_int64_files_numbers(tiny_bert: Path, tmp_path: Path) -> None:
    """`input_dtype="int32"`: the graph takes int32 ids (Hermes apps have no BigInt64Array), casts them to int64 in
    its first nodes and otherwise is the int64 file: same quantized weights, same outputs, same parity checks."""
    import onnx
    import onnxruntime as ort

    wide = export("onnx", model=tiny_bert, out=tmp_path / "int64", quantize="int8", seq_len=32, quiet=True).manifest
    narrow = export("onnx", model=tiny_bert, out=tmp_path / "int32", quantize="int8", seq_len=32, input_dtype="int32", quiet=True).manifest
    assert [i["dtype"] for i in narrow["inputs"]] == ["int32"] * 3 and wide["inputs"][0]["dtype"] == "int64"
    assert narrow["parity"]["passed"] and set(narrow["parity"]["kernel_paths"]) == {"host", "u8s8-saturating"}
    graph = onnx.load(str(tmp_path / "int32" / "model.onnx")).graph
    assert [i.type.tensor_type.elem_type for i in graph.input] == [onnx.TensorProto.INT32] * 3
    assert [n.op_type for n in graph.node[:3]] == ["Cast"] * 3
    inputs = encode(load_model(tiny_bert).tokenizer, ["the quick brown fox", "why"], 32, pad_to_seq_len=False)
    sessions = {d: ort.InferenceSession(str(tmp_path / d / "model.onnx"), providers=["CPUExecutionProvider"]) for d in ("int64", "int32")}
    expected = sessions["int64"].run(None, inputs)
    got = sessions["int32"].run(None, {k: v.astype(np.int32) for k, v in inputs.items()})
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(e, g)


@pytest.mark.parametrize(("target", "dtype"), [("onnx", "int16"), ("tflite", "int64"), ("executorch", "int32")])
def test_an_input_dtype_the_target_cannot_take_is_one_line(tiny_bert: Path, tmp_path: Path, target: str, dtype: str) -> None:
    from edgebert.errors import UserError

    with pytest.raises(UserError, match=f"--input-dtype {dtype} is not offered by target {target}; it takes"):
        export(target, model=tiny_bert, out=tmp_path / "o", input_dtype=dtype, quiet=True)
    assert not (tmp_path / "o").exists()


def test_int8_is_smaller_than_fp32(tiny_bert: Path, tmp_path: Path) -> None:
    sizes = {
        q: export("onnx", model=tiny_bert, out=tmp_path / q, quantize=q, seq_len=32, quiet=True).manifest["metrics"]["model_bytes"]
        for q in ("none", "int8")
    }
    assert sizes["int8"] < sizes["none"]


@pytest.mark.integration
@pytest.mark.parametrize("quantize", ["int8"])
def test_packaged_teacher_onnx_parity(packaged_teacher: Path, tmp_path: Path, quantize: str) -> None:
    report = export("onnx", model=None, out=tmp_path / "o", quantize=quantize, quiet=True)
    assert report.parity["passed"], report.parity
    assert report.manifest["outputs"][0]["shape"] == ["batch", 384]


def _ort_optimized_ops(model: Path | bytes, tmp_path: Path) -> list[str]:
    """The op types onnxruntime runs for `model` with default session options (its load-time graph, saved)."""
    import onnx
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(model if isinstance(model, bytes) else str(model), options, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]


@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_onnxruntime_runs_layernorm_and_ffn_down_projections_as_written(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quantize: str
) -> None:
    """No residual Add feeds a LayerNormalization (onnxruntime would fuse it into its slower SkipLayerNormalization),
    and weight-only int8 FFN weights do not become MatMulNBits (which would quantize their activations)."""
    import onnx

    from edgebert.targets.onnx import quantize as onnx_quantize

    monkeypatch.setattr(onnx_quantize, "RECIPE_MIN_COSINE", 0.0)  # store the FFN down-projections as int8
    report = export("onnx", model=tiny_bert, out=tmp_path / "o", quantize=quantize, seq_len=32, quiet=True)
    graph = onnx.load(str(tmp_path / "o" / "model.onnx")).graph
    produced_by = {o: n.op_type for n in graph.node for o in n.output}
    norms = [n for n in graph.node if n.op_type == "LayerNormalization"]
    assert norms and all(produced_by.get(n.input[0]) != "Add" for n in norms)
    assert report.manifest["target_details"]["fusion_guards"]["residual_adds_as_sum"] == 2 * 2 + 1  # 2 layers + embeddings
    ops = _ort_optimized_ops(tmp_path / "o" / "model.onnx", tmp_path)
    assert "SkipLayerNormalization" not in ops and "MatMulNBits" not in ops and ops.count("LayerNormalization") == len(norms)
    assert report.parity["passed"]


def test_weight_only_int8_stores_int8_and_stays_close(tmp_path: Path) -> None:
    """A MatMul's constant weight becomes int8 + one scale per output column (Cast + Mul), folded back to a float
    MatMul by onnxruntime."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from edgebert.targets.onnx.quantize import weight_only_int8

    rng = np.random.default_rng(0)
    weight = rng.normal(size=(16, 8)).astype(np.float32)
    weight[:, 3] *= 50.0  # an outlier column: per-column scales keep the other columns fine
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"), helper.make_node("MatMul", ["y", "V"], ["z"], name="other")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(np.eye(8, dtype=np.float32), "V")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert weight_only_int8(model, ["mm"]) == ["mm"]
    onnx.checker.check_model(model)
    stored = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert "W" not in stored and stored["W_int8"].dtype == np.int8 and stored["W_scale"].shape == (8,)
    assert stored["V"].dtype == np.float32  # not named: untouched
    x = rng.normal(size=(2, 16)).astype(np.float32)
    (z,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    step = np.abs(weight).max(axis=0) / 127.0
    assert np.all(np.abs(z - x @ weight) <= np.abs(x).sum(axis=1, keepdims=True) * step / 2 + 1e-5)
    assert _ort_optimized_ops(model.SerializeToString(), tmp_path) == ["MatMul", "MatMul"]


@pytest.mark.parametrize(("required", "storage", "islands"), [(0.0, "int8", INT8_FLOAT_ISLANDS[0]), (1.01, "float32", INT8_FLOAT_ISLANDS[-1])])
def test_int8_keeps_float_islands_and_stores_them_as_int8_only_when_the_guard_allows(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, required: float, storage: str, islands: list[str]
) -> None:
    """The recipe keeps the FFN down-projections in float, adds islands while the guard texts need it (a cosine no
    model reaches: the last one), and stores the islands' weights as int8 only when the guard allows."""
    import onnx

    from edgebert.parity import GUARD_SENTENCES
    from edgebert.parity_texts import wide_guard_texts
    from edgebert.targets.onnx import quantize as onnx_quantize

    monkeypatch.setattr(onnx_quantize, "RECIPE_MIN_COSINE", required)
    report = export("onnx", model=tiny_bert, out=tmp_path / "q", quantize="int8", seq_len=32, quiet=True)
    quantization = report.manifest["target_details"]["quantization"]
    decision = quantization["float_island_weights"]
    assert decision["storage"].startswith(storage) and decision["guard_texts"] == len(GUARD_SENTENCES) + len(wide_guard_texts())
    assert quantization["float_islands"] == list(islands) and quantization["guard"]["texts"] == decision["guard_texts"]
    graph = onnx.load(str(tmp_path / "q" / "model.onnx")).graph
    float_weights = {i.name for i in graph.initializer if i.data_type == onnx.TensorProto.FLOAT and len(i.dims) == 2}
    down = [n for n in graph.node if n.op_type == "MatMul" and "/output/dense/" in n.name and "attention" not in n.name]
    assert len(down) == 2  # still float MatMuls (float activations) either way
    assert all((n.input[1] in float_weights) == (storage == "float32") for n in down)
    assert report.parity["passed"]


def test_parity_covers_the_wide_texts_and_records_their_spread(tiny_bert: Path, tmp_path: Path) -> None:
    """Every wide parity text is checked on every kernel path, each alone at its own length as an app runs it;
    the manifest records the worst and the 1st percentile, and the gate holds the worst."""
    from edgebert.export import WIDE_CHECK
    from edgebert.parity_texts import wide_parity_texts

    report = export("onnx", model=tiny_bert, out=tmp_path / "w", quantize="int8", seq_len=32, quiet=True)
    parity = report.parity
    spread = parity[WIDE_CHECK]
    assert spread["texts"] == len(wide_parity_texts()) >= 250
    assert spread["min_cosine"] <= spread["p1_cosine"] <= 1.0 and parity["min_cosine"] <= spread["min_cosine"]
    for path in parity["kernel_paths"].values():
        assert path[WIDE_CHECK]["sentences"] == spread["texts"] and path[WIDE_CHECK]["p1_cosine"] >= spread["min_cosine"]


def test_int4_stores_4bit_blocks_computes_in_float_and_holds(tiny_bert: Path, tmp_path: Path) -> None:
    """int4: every weight MatMul but the float islands is a 4-bit MatMulNBits without activation quantization (so no
    CPU-dependent kernel path), the word table a 4-bit GatherBlockQuantized; smaller than int8, and it holds."""
    import onnx
    from onnx import helper

    from edgebert.targets.onnx.quantize import INT4_BLOCK as BLOCK
    from edgebert.targets.base import INT4_FLOAT_ISLANDS

    sizes, reports = {}, {}
    for quantize in ("int8", "int4"):
        reports[quantize] = export("onnx", model=tiny_bert, out=tmp_path / quantize, quantize=quantize, seq_len=32, quiet=True)
        sizes[quantize] = reports[quantize].manifest["metrics"]["model_bytes"]
    report = reports["int4"]
    graph = onnx.load(str(tmp_path / "int4" / "model.onnx")).graph
    blocks = [{a.name: helper.get_attribute_value(a) for a in n.attribute} for n in graph.node if n.op_type == "MatMulNBits"]
    assert blocks and all(b["bits"] == 4 and b["block_size"] == BLOCK and b.get("accuracy_level", 0) == 0 for b in blocks)
    tables = [n for n in graph.node if n.op_type == "GatherBlockQuantized"]
    assert any("word_embeddings" in n.input[0] for n in tables)
    details = report.manifest["target_details"]
    quantization = details["quantization"]
    assert quantization["recipe"] == "int4" and tuple(quantization["float_islands"]) in INT4_FLOAT_ISLANDS and details["opset"] == 21
    island_nodes = set(quantization["excluded_nodes"])
    assert all(n.op_type != "MatMul" or n.name in island_nodes or n.input[1] not in {i.name for i in graph.initializer} for n in graph.node)
    assert set(report.parity["kernel_paths"]) == {"host"} and report.parity["passed"]
    assert sizes["int4"] < 0.75 * sizes["int8"]
