"""Exports of sentence-transformers stacks (several pooling modes, Dense, no Normalize) compute what
`SentenceTransformer.encode` computes, in every target's own runtime (a Dense module was dropped and
weighted-mean pooling exported as mean, silently)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebert.errors import UserError

SEQ_LEN = 32
TEXTS = ["a man plays the guitar on the stage", "hello world", "the quick brown fox jumps over the lazy dog"]


def _st_dir(base: Path, out: Path, modes: tuple[str, ...], dense: int | None, normalize: bool) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer

    torch.manual_seed(3)
    modules = [Transformer(str(base), max_seq_length=SEQ_LEN), Pooling(32, pooling_mode=modes)]
    if dense:
        modules.append(Dense(32 * len(modes), dense))
    if normalize:
        modules.append(Normalize())
    SentenceTransformer(modules=modules, device="cpu").save(str(out))
    return out


@pytest.fixture(scope="module")
def stack_dir(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cls + weightedmean + lasttoken pooling → Dense 96→16 (tanh), no Normalize."""
    return _st_dir(tiny_bert, tmp_path_factory.mktemp("st") / "stack", ("cls", "weightedmean", "lasttoken"), 16, False)


def _encode(model_dir: Path) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu").encode(TEXTS, convert_to_numpy=True)


@pytest.mark.parametrize("target", ["onnx", "tflite", "tfjs"])
def test_export_computes_sentence_transformers_encode(stack_dir: Path, tmp_path: Path, target: str) -> None:
    from edgebert.export import export
    from edgebert.modelio import load_model
    from edgebert.parity import encode
    from edgebert.targets import get_exporter

    report = export(target, model=stack_dir, out=tmp_path / target, seq_len=SEQ_LEN, quiet=True)
    outputs = {o["name"]: o for o in report.manifest["outputs"]}
    assert outputs["sentence_embedding"]["dim"] == 16 and outputs["sentence_embedding"]["normalized"] is False
    assert report.manifest["model"]["sentence_stack"]["pooling"] == "cls+weightedmean+lasttoken"
    runner = get_exporter(target).load_runner(report.out_dir, report.manifest)
    tokenizer = load_model(stack_dir).tokenizer
    got = np.concatenate([runner.run(encode(tokenizer, [t], SEQ_LEN, pad_to_seq_len=True))["sentence_embedding"] for t in TEXTS])
    runner.close()
    np.testing.assert_allclose(got, _encode(stack_dir), atol=2e-4)


def test_loaded_embedder_matches_encode_for_each_pooling_mode(tiny_bert: Path, tmp_path: Path) -> None:
    import torch

    from edgebert.heads import POOLING_MODES
    from edgebert.modelio import load_model
    from edgebert.parity import encode

    for mode in POOLING_MODES:
        model_dir = _st_dir(tiny_bert, tmp_path / mode, (mode,), None, True)
        loaded = load_model(model_dir)
        inputs = encode(loaded.tokenizer, TEXTS, SEQ_LEN, pad_to_seq_len=False)
        with torch.inference_mode():
            got, _ = loaded.embedder(**{k: torch.from_numpy(v) for k, v in inputs.items()})
        np.testing.assert_allclose(got.numpy(), _encode(model_dir), atol=2e-5, err_msg=mode)


def test_distill_refuses_a_stack_it_cannot_train(stack_dir: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    import edgebert

    with pytest.raises(UserError, match="Dense"):
        edgebert.distill(str(stack_dir), str(tiny_corpus), tmp_path / "s", student_layers=1, steps=1, quiet=True)


def _classifier(tiny_bert: Path, out: Path) -> Path:
    import shutil

    from transformers import BertForSequenceClassification

    shutil.copytree(tiny_bert, out)
    model = BertForSequenceClassification.from_pretrained(tiny_bert, num_labels=2, id2label={0: "neg", 1: "pos"})
    model.save_pretrained(out, safe_serialization=True)
    return out


def test_a_classifier_asked_for_a_head_it_lacks_is_refused(tiny_bert: Path, tmp_path: Path) -> None:
    from edgebert.export import export

    model = _classifier(tiny_bert, tmp_path / "clf")
    with pytest.raises(UserError, match="has no fill-mask head"):
        export("onnx", model=model, out=tmp_path / "out", task="fill-mask", quiet=True)


def test_feature_extraction_on_a_classifier_says_the_head_is_left_out(tiny_bert: Path, tmp_path: Path, capsys) -> None:
    from edgebert.cli import main

    model = _classifier(tiny_bert, tmp_path / "clf")
    code = main(["export", "--target", "onnx", "--model", str(model), "--out", str(tmp_path / "out"), "--task", "feature-extraction", "--seq-len", "32"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    manifest = __import__("json").loads((tmp_path / "out" / "edgebert.json").read_text())
    assert manifest["task"] == "feature-extraction" and manifest["model"]["head_left_out"] == "text-classification"
    assert "text-classification head is left out" in captured.err
    assert "head is NOT in this export" in captured.out
