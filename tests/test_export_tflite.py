"""TFLite target: litert-torch conversion, int8/fp16 recipes, the signature contract and the runner."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("litert_torch")
pytest.importorskip("ai_edge_litert")

from edgebert.errors import TargetUnavailable  # noqa: E402
from edgebert.export import export  # noqa: E402
from edgebert.parity import PARITY_SENTENCES, encode  # noqa: E402
from edgebert.targets.tflite.exporter import MODEL_FILE, SIGNATURE, TFLiteExporter  # noqa: E402

SEQ_LEN = 32
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
OUTPUTS = ["last_hidden_state", "sentence_embedding"]


@pytest.fixture(scope="module")
def tiny_exports(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One export of the tiny BERT per quantization, shared by this module's tests."""
    base = tmp_path_factory.mktemp("tflite")
    return {
        q: export("tflite", model=tiny_bert, out=base / f"tiny-{q}", quantize=q, seq_len=SEQ_LEN, quiet=True)
        for q in ("none", "int8", "int4", "fp16")
    }


@pytest.mark.parametrize("quantize", ["none", "int8", "int4", "fp16"])
def test_export_writes_a_verified_model(tiny_exports: dict, quantize: str) -> None:
    report = tiny_exports[quantize]
    manifest = report.manifest
    assert (report.out_dir / MODEL_FILE).is_file()
    assert manifest["target"] == "tflite" and manifest["quantization"] == quantize
    assert manifest["static_shape"] is True
    assert [i["name"] for i in manifest["inputs"]] == INPUTS
    assert all(i["dtype"] == "int32" and i["shape"] == [1, SEQ_LEN] for i in manifest["inputs"])
    assert manifest["files"] == {MODEL_FILE: (report.out_dir / MODEL_FILE).stat().st_size}
    assert manifest["parity"]["passed"] is True
    assert manifest["parity"]["min_cosine"] >= manifest["parity"]["threshold"]
    # Checked on XNNPACK (LiteRT's default) and on the built-in kernels, whose int8 arithmetic differs.
    assert set(manifest["parity"]["kernel_paths"]) == {"xnnpack", "builtin"}
    assert manifest["target_details"]["signature"] == SIGNATURE
    assert manifest["target_details"]["converter"] == "litert_torch"
    assert (report.out_dir / "tokenizer.json").exists() or (report.out_dir / "vocab.txt").exists()


@pytest.mark.parametrize("quantize", ["none", "int8", "fp16"])
def test_signature_contract(tiny_exports: dict, quantize: str) -> None:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(tiny_exports[quantize].out_dir / MODEL_FILE))
    signatures = interpreter.get_signature_list()
    assert list(signatures) == [SIGNATURE]
    assert sorted(signatures[SIGNATURE]["inputs"]) == sorted(INPUTS)
    assert sorted(signatures[SIGNATURE]["outputs"]) == OUTPUTS
    details = interpreter.get_signature_runner(SIGNATURE).get_input_details()
    for d in details.values():
        assert d["dtype"] == np.int32 and list(d["shape"]) == [1, SEQ_LEN]


def test_quantized_weights_and_sizes(tiny_exports: dict) -> None:
    sizes = {q: r.manifest["metrics"]["model_bytes"] for q, r in tiny_exports.items()}
    assert sizes["int8"] < sizes["fp16"] < sizes["none"]
    dtypes = {q: r.manifest["target_details"]["weight_dtypes"] for q, r in tiny_exports.items()}
    assert dtypes["none"]["FULLY_CONNECTED"] == {"float32": 12}
    # Embedding tables are quantized too, not only the dense layers.
    assert set(dtypes["int8"]["EMBEDDING_LOOKUP"]) == {"int8"}
    assert set(dtypes["int8"]["FULLY_CONNECTED"]) == {"int8"}
    assert set(dtypes["fp16"]["EMBEDDING_LOOKUP"]) == {"float16"}
    assert set(dtypes["fp16"]["FULLY_CONNECTED"]) == {"float16"}
    # int4: 4-bit blocks for every dense layer but the float islands (int8 weight-only) and for the tables.
    assert sizes["int4"] < sizes["int8"]
    assert dtypes["int4"]["EMBEDDING_LOOKUP"] == {"int4": 2}
    islands = len(tiny_exports["int4"].manifest["target_details"]["quantization"]["float_islands"])
    expected = {"int4": 12 - 2 * islands, "int8": 2 * islands}
    assert dtypes["int4"]["FULLY_CONNECTED"] == {k: n for k, n in expected.items() if n}


def test_a_rewritten_flatbuffer_is_packed_byte_for_byte_as_the_generated_code_packs_it(tiny_exports: dict) -> None:
    """`quantize.packed` (buffers as numpy arrays: written whole) gives the bytes of the generated `Pack` fed the
    bytearray slices `read_model_from_bytearray` leaves (written a byte a call: 20 s for the teacher's int8 file)."""
    from ai_edge_litert.tools import flatbuffer_utils

    from edgebert.targets.tflite.quantize import packed

    data = bytearray((tiny_exports["int8"].out_dir / "model.tflite").read_bytes())
    slow = flatbuffer_utils.read_model_from_bytearray(bytearray(data))
    for buffer in slow.buffers:
        if buffer.data is not None:
            buffer.data = bytearray(bytes(buffer.data))
    expected = bytes(flatbuffer_utils.convert_object_to_bytearray(slow))
    assert packed(flatbuffer_utils.read_model_from_bytearray(bytearray(data))) == expected


def test_runner_batches_and_pads_short_inputs(tiny_exports: dict, tiny_bert: Path) -> None:
    from edgebert.modelio import load_model
    from edgebert.parity import check_parity

    report = tiny_exports["none"]
    loaded = load_model(tiny_bert)
    runner = TFLiteExporter().load_runner(report.out_dir, report.manifest, threads=1)
    try:
        short = encode(loaded.tokenizer, PARITY_SENTENCES[:3], SEQ_LEN, pad_to_seq_len=False)
        length = short["input_ids"].shape[1]
        assert length < SEQ_LEN
        out = runner.run(short)
        assert out["sentence_embedding"].shape == (3, 32) and out["sentence_embedding"].dtype == np.float32
        assert out["last_hidden_state"].shape == (3, length, 32)
        assert check_parity(runner.run, loaded.embedder, short, 0.9999).passed
        too_long = {k: np.zeros((1, SEQ_LEN + 1), dtype=np.int64) for k in INPUTS}
        with pytest.raises(ValueError, match=f"takes at most {SEQ_LEN}"):
            runner.run(too_long)
    finally:
        runner.close()


def test_missing_toolchain_is_reported_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "litert_torch" else real(name, *a)
    )
    with pytest.raises(TargetUnavailable, match=r"litert-torch.*edgebert\[tflite\]"):
        TFLiteExporter().check_available()


def test_quantize_offers_int8_int8_static_int4_w4a8_and_fp16_only(tiny_bert: Path, tmp_path: Path) -> None:
    from edgebert.errors import UserError

    assert TFLiteExporter.quantizations == ("int8", "int8-static", "int4", "w4a8", "fp16")
    with pytest.raises(UserError, match="not offered"):
        export("tflite", model=tiny_bert, out=tmp_path / "x", quantize="uint8", seq_len=SEQ_LEN, quiet=True)
    assert not (tmp_path / "x").exists()


@pytest.mark.integration  # the teacher's int8 (float recipes: on tiny models; the teacher's fp32 TF.js is CI's main job)
@pytest.mark.parametrize(("quantize", "min_cosine"), [("int8", 0.99)])
def test_teacher_export_parity(packaged_teacher: Path, tmp_path: Path, quantize: str, min_cosine: float) -> None:
    report = export("tflite", model=None, out=tmp_path / f"teacher-{quantize}", quantize=quantize, quiet=True)
    parity = report.manifest["parity"]
    assert parity["passed"] is True
    assert parity["threshold"] == min_cosine
    assert parity["min_cosine"] >= min_cosine
    assert report.manifest["inputs"][0]["shape"] == [1, 128]
    if quantize == "int8":
        assert report.manifest["metrics"]["model_bytes"] < 30_000_000
        assert set(report.manifest["target_details"]["weight_dtypes"]["EMBEDDING_LOOKUP"]) == {"int8"}


def test_tensorflow_fallback_path_verifies(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback path (the captured graph in TensorFlow ops -> SavedModel -> TFLiteConverter), forced, passes the
    same parity check."""
    monkeypatch.setenv("EDGEBERT_TFLITE_CONVERTER", "tensorflow")
    report = export("tflite", model=tiny_bert, out=tmp_path / "tf", seq_len=32, quiet=True)
    assert report.manifest["target_details"]["converter"].startswith("tensorflow")
    assert report.parity["passed"], report.parity


def test_int4_stores_a_weight_whose_inputs_32_does_not_divide_as_int8(tmp_path: Path) -> None:
    """ai-edge-quantizer has no blockwise form for a weight whose input axis 32 does not divide (a pruned FFN's 507
    inputs) and refuses the whole model: the int4 recipe stores those weights int8 per channel, as int8 does."""
    from conftest import build_tiny_bert

    model_dir = build_tiny_bert(tmp_path / "tiny", ffn=48)  # the FFN down-projections take 48 inputs
    report = export("tflite", model_dir, tmp_path / "int4", quantize="int4", seq_len=16, quiet=True)
    dtypes = report.manifest["target_details"]["weight_dtypes"]["FULLY_CONNECTED"]
    quantization = report.manifest["target_details"]["quantization"]
    islands = 2 * max(len(quantization["float_islands"]), 1)  # 2 layers: the FFN down-projections, and any other island role
    kept = "float16" if quantization["float_island_weights"].startswith("float16") else "int8"  # weight-only either way
    assert dtypes == {k: n for k, n in {"int4": 12 - islands, kept: islands}.items() if n}
    assert report.manifest["parity"]["passed"]


def test_int8_island_weights_hold_only_while_they_keep_the_islands_purpose() -> None:
    """int8 island weights stay while they hold the recipe and leave at most twice float16's drift (or a negligible
    one): the guard figures measured with TFLite's q/k/v + FFN islands (benchmarks/README.md)."""
    from edgebert.targets.base import int8_island_weights_hold

    assert int8_island_weights_hold(0.99689, 0.997803)  # all-MiniLM-L6-v2: 1.4x float16's drift
    assert not int8_island_weights_hold(0.993738, 0.999069)  # all-mpnet-base-v2: 6.7x
    assert int8_island_weights_hold(0.99995, 0.9999999)  # negligible either way
    assert not int8_island_weights_hold(0.992, 0.9921)  # below the recipe's guard threshold


def test_float16_island_weights_are_not_measured_when_int8_drift_is_negligible(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the int8 island weights' drift is negligible (forced here: any drift is), the rule keeps them whatever
    float16 would measure, so the float16 variant is neither quantized nor measured; the manifest says so."""
    from edgebert.targets import base
    from edgebert.targets.tflite import quantize as tq

    storages: list[str] = []
    real = tq.quantize_tflite

    def spy(*args: Any, island_weights: str = "int8", **kwargs: Any) -> bytes:
        storages.append(island_weights)
        return real(*args, island_weights=island_weights, **kwargs)

    monkeypatch.setattr(base, "ISLAND_INT8_NEGLIGIBLE_DRIFT", 1.0)
    monkeypatch.setattr(tq, "quantize_tflite", spy)
    report = export("tflite", model=tiny_bert, out=tmp_path / "int8", quantize="int8", seq_len=SEQ_LEN, quiet=True)
    quantization = report.manifest["target_details"]["quantization"]
    assert storages and "float16" not in storages
    assert quantization["float_island_weights"].startswith("int8")
    assert quantization["float_island_weights_guard"]["float16"] is None
    assert report.manifest["parity"]["passed"]


def test_float16_island_weights_when_int8_ones_bring_the_drift_back(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When int8 island weights fail `int8_island_weights_hold` (forced here: no drift allowed), the islands' weights
    are stored float16: the manifest says so with both guard figures, the file holds float16 weights for exactly the
    islands' Linears, and parity holds."""
    from edgebert.targets import base

    monkeypatch.setattr(base, "ISLAND_INT8_MAX_DRIFT_RATIO", 0.0)
    monkeypatch.setattr(base, "ISLAND_INT8_NEGLIGIBLE_DRIFT", 0.0)
    report = export("tflite", model=tiny_bert, out=tmp_path / "int8", quantize="int8", seq_len=SEQ_LEN, quiet=True)
    quantization = report.manifest["target_details"]["quantization"]
    assert quantization["float_island_weights"].startswith("float16")
    assert set(quantization["float_island_weights_guard"]) >= {"int8", "float16"}
    assert quantization["guard"]["min_cosine"] == quantization["float_island_weights_guard"]["float16"]
    islands = 2 * len(quantization["float_islands"])  # 2 layers
    assert report.manifest["target_details"]["weight_dtypes"]["FULLY_CONNECTED"] == {"int8": 12 - islands, "float16": islands}
    assert report.manifest["parity"]["passed"]
