"""DistilBERT, RoBERTa (byte-level BPE), ELECTRA (with its embedding projection), MPNet (relative-position
buckets), ModernBERT (rotary, GeGLU, sliding-window attention), DeBERTa-v3 (disentangled relative attention) and
XLNet (relative attention, left padding, a last-token classifier) through `export` in every target, and a one-line
refusal from the verbs not yet verified on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from model_zoo import add_st_stack, build_deberta_v2, build_distilbert, build_electra, build_modernbert, build_mpnet, build_roberta, build_xlm_roberta, build_xlnet

from edgebert.errors import UserError

SEQ_LEN = 32
BUILD = {"distilbert": build_distilbert, "roberta": build_roberta, "electra": build_electra, "mpnet": build_mpnet,
         "modernbert": build_modernbert, "deberta-v2": build_deberta_v2, "xlm-roberta": build_xlm_roberta,
         "xlnet": lambda d: build_xlnet(d, head="sequence-classification")}  # XLNet: what users deploy, its classifier


@pytest.fixture(scope="module")
def family_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One tiny model per new family; the RoBERTa one carries a sentence-transformers stack (cls pooling), the XLNet one
    is a sequence classifier."""
    root = tmp_path_factory.mktemp("families")
    models = {name: build(root / name) for name, build in BUILD.items()}
    add_st_stack(models["roberta"], pooling="cls")
    return models


# Every family to every target; ExecuTorch's int8 (a minute a family) for the two whose int8 once failed, fp32 for the rest.
EXPORTS = [(family, target, quantize) for family in BUILD for target, quantize in
           [("onnx", "none"), ("onnx", "int8"), ("tflite", "none"), ("tfjs", "none"),
            ("executorch", "int8" if family in ("modernbert", "deberta-v2") else "none")]]  # fmt: skip


@pytest.mark.parametrize(("family", "target", "quantize"), EXPORTS)
def test_new_family_exports_and_passes_parity(family_models: dict[str, Path], tmp_path: Path, family: str, target: str, quantize: str) -> None:
    """Every family to every target. ExecuTorch once failed on two of them: ModernBERT's program refused a batch of one
    text (the edge verifier pinned its batch to the sample's), DeBERTa's int8 quantized its relative-position table,
    whose weight the model reads whole (through a LayerNorm), not by lookup: it stays float."""
    from edgebert.export import export

    report = export(target, model=family_models[family], out=tmp_path / "out", quantize=quantize, seq_len=SEQ_LEN, quiet=True)
    manifest = report.manifest
    assert manifest["parity"]["passed"] and manifest["model"]["family"] == family
    names = [i["name"] for i in manifest["inputs"]]
    assert names == (["input_ids", "attention_mask", "token_type_ids"] if family in ("electra", "xlnet") else ["input_ids", "attention_mask"])
    if family == "roberta":
        assert manifest["model"]["pooling"] == "cls"
    if target == "executorch" and quantize == "int8":
        assert manifest["target_details"]["quantization"].get("float_tables", []) == (["encoder.encoder.rel_embeddings"] if family == "deberta-v2" else [])
    if family == "xlnet" and manifest["static_shape"]:
        _short_inputs_are_padded_on_the_left(report.out_dir, manifest, family_models[family])


def test_unverified_verbs_refuse_with_one_line() -> None:
    """Every family runs every verb now (tests/test_families_verbs.py); a family whose `verbs` leave one out refuses
    it with one line naming the families that support it."""
    from dataclasses import replace

    from edgebert.families import BERT, FAMILIES

    assert all(set(f.verbs) == {"distill", "compress", "trim", "export", "bench"} for f in FAMILIES)
    with pytest.raises(UserError, match="distill does not support bert models yet \\(export do\\); distill supports: bert") as info:
        replace(BERT, verbs=("export",)).require("distill")
    assert "\n" not in str(info.value)
    from edgebert.families import MPNET

    MPNET.require("compress")  # its FFN, and the same heads in every layer (tests/test_families_verbs.py)
    from edgebert.families import MODERNBERT

    MODERNBERT.require("distill")  # whole layers copied, with their attention kind
    MODERNBERT.require("compress")  # fused q/k/v thirds, GeGLU halves


@pytest.mark.parametrize("family", list(BUILD))
def test_every_role_resolves_on_the_real_model(family_models: dict[str, Path], family: str) -> None:
    from torch import nn
    from transformers import AutoModel

    from edgebert.families import LAYER_ROLES, family_for

    model = AutoModel.from_pretrained(family_models[family])
    fam = family_for(model.config.model_type)
    layers = fam.layers(model)
    assert len(layers) == 2
    for role in LAYER_ROLES:
        assert isinstance(fam.module(layers[0], role), nn.Module), role
    parts = fam.embedding_parts(model)
    assert all(isinstance(m, nn.Module) for m in parts.values())
    assert ("projection" in parts) == (family == "electra")  # the tiny ELECTRA has embedding_size 16 != hidden 32


@pytest.fixture(scope="module")
def roberta_pad0(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BERT re-laid as a RoBERTa with its WordPiece vocabulary: pad id 0, positions from 1 (as the packaged
    teacher re-laid by benchmarks/suites/relayout_teacher.py)."""
    from transformers import AutoModel, AutoTokenizer

    from edgebert.families import BERT, family_named
    from edgebert.relayout import relayout

    model, _ = relayout(AutoModel.from_pretrained(tiny_bert), BERT, family_named("roberta"), with_head=False)
    out = tmp_path_factory.mktemp("roberta-pad0") / "roberta"
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(out)
    assert model.config.pad_token_id == 0
    return out


@pytest.mark.parametrize("target", ["tfjs", "tflite"])
def test_a_roberta_whose_pad_id_is_not_1_exports_faithfully(roberta_pad0: Path, tmp_path: Path, target: str) -> None:
    """transformers' TF RoBERTa counts positions from a hard-coded pad id 1; TF.js parity was 0.83 on the re-laid teacher."""
    from edgebert.export import export

    report = export(target, model=roberta_pad0, out=tmp_path / "out", seq_len=SEQ_LEN, quiet=True)
    assert report.manifest["parity"]["passed"] and report.manifest["parity"]["min_cosine"] > 0.9999


@pytest.mark.parametrize("family", ["roberta", "distilbert", "electra", "albert", "mpnet", "modernbert", "deberta-v2", "xlnet"])
def test_tfjs_with_a_short_and_a_long_bucket(family_models: dict[str, Path], tmp_path: Path, family: str) -> None:
    """Buckets 16 and 128 (batched and per-head attention graphs sharing weights), uint8 as apps ship them: a RoBERTa
    export of these lengths once failed in the Node runner after minutes."""
    from model_zoo import build_albert

    from edgebert.export import export

    model = build_albert(tmp_path / "albert") if family == "albert" else family_models[family]
    report = export("tfjs", model=model, out=tmp_path / "out", quantize="uint8", seq_len=[16, 128], quiet=True)
    manifest = report.manifest
    assert manifest["parity"]["passed"] and [b["seq_len"] for b in manifest["buckets"]] == [16, 128]
    assert {b["attention"] for b in manifest["buckets"]} == {"batched", "per-head"}


def test_xlnet_classifier_exports_to_executorch_at_one_length_padded_on_the_left(family_models: dict[str, Path], tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """torch.export cannot keep XLNet's sequence free (its relative shift): one program at --seq-len, inputs padded on
    the left as its tokenizer does (the manifest says so); several lengths are refused with one line."""
    from edgebert.export import export

    # first: the refusal comes before the ExecuTorch runtime is loaded (its C++ logs share this process' stderr)
    code, _, err = run_cli("export", "--model", str(family_models["xlnet"]), "--target", "executorch", "--seq-len", "16,32", "--out", str(tmp_path / "two"))
    refusal = [line for line in err.splitlines() if line.startswith("edgebert:")]
    assert code == 2 and len(refusal) == 1 and "one --seq-len" in refusal[0] and "Traceback" not in err, err
    assert not (tmp_path / "two").exists()
    report = export("executorch", model=family_models["xlnet"], out=tmp_path / "out", quantize="int8", seq_len=SEQ_LEN, quiet=True)
    manifest = report.manifest
    assert manifest["parity"]["passed"] and manifest["static_shape"] and manifest["model"]["padding_side"] == "left"
    assert [b["seq_len"] for b in manifest["buckets"]] == [SEQ_LEN] and manifest["inputs"][0]["shape"] == [1, SEQ_LEN]
    _short_inputs_are_padded_on_the_left(report.out_dir, manifest, family_models["xlnet"])


def _short_inputs_are_padded_on_the_left(export_dir: Path, manifest: dict, model: Path) -> None:
    """A static runner given a text at its own length (as bench gives it) pads it on the tokenizer's side: the logits
    are PyTorch's on that text (on the right, the classifier would read a padding token)."""
    import numpy as np

    from edgebert.modelio import load_model
    from edgebert.parity import encode, torch_reference
    from edgebert.targets import get_exporter

    loaded = load_model(model, task="text-classification")
    runner = get_exporter(manifest["target"]).load_runner(export_dir, manifest)
    try:
        for text in ("hello world", "the cat sat on the mat"):
            feed = encode(loaded.tokenizer, [text], SEQ_LEN, pad_to_seq_len=False)
            assert feed["input_ids"].shape[1] < SEQ_LEN
            np.testing.assert_allclose(runner.run(feed)["logits"], torch_reference(loaded.embedder, feed)["logits"], atol=1e-3)
    finally:
        runner.close()


def test_an_xlnet_embedder_pools_its_last_token_in_a_left_padded_batch(tmp_path: Path) -> None:
    """XLNet pads on the left; its default pooling (lasttoken) must take each row's last token, not the one at its
    length (a pad in a short row): the padded parity batch holds, and the row equals the text embedded alone."""
    import numpy as np

    from edgebert.export import export
    from edgebert.modelio import load_model
    from edgebert.parity import encode, torch_reference

    model = build_xlnet(tmp_path / "xlnet")
    report = export("onnx", model=model, out=tmp_path / "onnx", seq_len=SEQ_LEN, quiet=True)
    assert report.parity["passed"] and report.manifest["model"]["padding_side"] == "left"
    loaded = load_model(model)
    texts = ["a short one", "a much longer sentence with many more words than the first"]
    batch = torch_reference(loaded.embedder, encode(loaded.tokenizer, texts, SEQ_LEN, pad_to_seq_len=False))["sentence_embedding"]
    alone = torch_reference(loaded.embedder, encode(loaded.tokenizer, texts[:1], SEQ_LEN, pad_to_seq_len=False))["sentence_embedding"]
    assert np.allclose(batch[0], alone[0], atol=1e-5)
