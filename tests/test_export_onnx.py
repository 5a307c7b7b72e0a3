"""ONNX export on tiny random BERTs (fast) and on the packaged teacher (integration)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebert.artifact import read_manifest
from edgebert.export import export
from edgebert.modelio import load_model
from edgebert.parity import encode, torch_reference


@pytest.mark.parametrize("quantize", ["none", "int8", "fp16"])
def test_tiny_export_verifies_and_describes_itself(tiny_bert: Path, tmp_path: Path, quantize: str) -> None:
    out = tmp_path / f"onnx-{quantize}"
    report = export("onnx", model=tiny_bert, out=out, quantize=quantize, seq_len=64, quiet=True)
    manifest = read_manifest(out)
    assert manifest == {**report.manifest, "schema_version": 1}
    assert manifest["target"] == "onnx" and manifest["quantization"] == quantize
    assert [i["name"] for i in manifest["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    assert manifest["inputs"][0] == {"name": "input_ids", "dtype": "int64", "shape": ["batch", "sequence"]}
    assert manifest["files"]["model.onnx"] == (out / "model.onnx").stat().st_size
    assert "tokenizer.json" in manifest["tokenizer_files"] and (out / "tokenizer.json").exists()
    parity = manifest["parity"]
    assert parity["passed"] and parity["natural_length"]["sentences"] == 10
    assert parity["min_cosine"] >= parity["threshold"]


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


def test_int8_is_smaller_than_fp32(tiny_bert: Path, tmp_path: Path) -> None:
    sizes = {
        q: export("onnx", model=tiny_bert, out=tmp_path / q, quantize=q, seq_len=32, quiet=True).manifest["model_bytes"]
        for q in ("none", "int8")
    }
    assert sizes["int8"] < sizes["none"]


@pytest.mark.integration
@pytest.mark.parametrize("quantize", ["none", "int8", "fp16"])
def test_packaged_teacher_onnx_parity(packaged_teacher: Path, tmp_path: Path, quantize: str) -> None:
    report = export("onnx", model=None, out=tmp_path / "o", quantize=quantize, quiet=True)
    assert report.parity["passed"], report.parity
    assert report.manifest["outputs"][0]["shape"] == ["batch", 384]
