"""DistilBERT, RoBERTa (byte-level BPE), ELECTRA (with its embedding projection), MPNet (relative-position
buckets), ModernBERT (rotary, GeGLU, sliding-window attention) and DeBERTa-v3 (disentangled relative attention)
through `export` in every target, and a one-line refusal from the verbs not yet verified on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from model_zoo import add_st_stack, build_deberta_v2, build_distilbert, build_electra, build_modernbert, build_mpnet, build_roberta, build_xlm_roberta

from edgebert.errors import UserError

SEQ_LEN = 32
BUILD = {"distilbert": build_distilbert, "roberta": build_roberta, "electra": build_electra, "mpnet": build_mpnet,
         "modernbert": build_modernbert, "deberta-v2": build_deberta_v2, "xlm-roberta": build_xlm_roberta}


@pytest.fixture(scope="module")
def family_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One tiny model per new family; the RoBERTa one carries a sentence-transformers stack (cls pooling)."""
    root = tmp_path_factory.mktemp("families")
    models = {name: build(root / name) for name, build in BUILD.items()}
    add_st_stack(models["roberta"], pooling="cls")
    return models


@pytest.mark.parametrize("family", list(BUILD))
@pytest.mark.parametrize(("target", "quantize"), [("onnx", "none"), ("onnx", "int8"), ("tflite", "none"), ("tfjs", "none")])
def test_new_family_exports_and_passes_parity(family_models: dict[str, Path], tmp_path: Path, family: str, target: str, quantize: str) -> None:
    from edgebert.export import export

    report = export(target, model=family_models[family], out=tmp_path / "out", quantize=quantize, seq_len=SEQ_LEN, quiet=True)
    manifest = report.manifest
    assert manifest["parity"]["passed"] and manifest["model"]["family"] == family
    names = [i["name"] for i in manifest["inputs"]]
    assert names == (["input_ids", "attention_mask", "token_type_ids"] if family == "electra" else ["input_ids", "attention_mask"])
    if family == "roberta":
        assert manifest["model"]["pooling"] == "cls"


def test_unverified_verbs_refuse_with_one_line() -> None:
    """Every family runs every verb now (tests/test_families_verbs.py); a family whose `verbs` leave one out refuses
    it with one line naming the families that support it."""
    from dataclasses import replace

    from edgebert.families import BERT, FAMILIES

    assert all(f.verbs == ("distill", "compress", "trim", "export", "bench") for f in FAMILIES if f.prunable)
    with pytest.raises(UserError, match="distill does not support bert models yet \\(export do\\); distill supports: bert") as info:
        replace(BERT, verbs=("export",)).require("distill")
    assert "\n" not in str(info.value)
    from edgebert.families import MPNET

    with pytest.raises(UserError, match="compress does not support mpnet models yet"):  # heads share one bias table
        MPNET.require("compress")
    from edgebert.families import MODERNBERT

    MODERNBERT.require("distill")  # whole layers copied, with their attention kind
    with pytest.raises(UserError, match="compress does not support modernbert models yet"):  # pre-norm, fused q/k/v
        MODERNBERT.require("compress")


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
    teacher re-laid by benchmarks/relayout_teacher.py)."""
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


@pytest.mark.parametrize("family", ["roberta", "distilbert", "electra", "albert", "mpnet", "modernbert", "deberta-v2"])
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


def test_an_xlnet_classifier_is_refused_saying_what_cannot_be_reproduced(tiny_bert: Path, tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """XLNet (left padding, last-token classifier): every verb refuses it with one line saying why, nothing written."""
    import shutil

    from transformers import XLNetConfig, XLNetForSequenceClassification

    model = tmp_path / "xlnet"
    XLNetForSequenceClassification(XLNetConfig(vocab_size=160, d_model=32, n_layer=2, n_head=4, d_inner=64)).save_pretrained(model)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_bert / name, model / name)
    code, _, err = run_cli("export", "--model", str(model), "--target", "onnx", "--out", str(tmp_path / "out"))
    assert code == 2 and "left-padded input" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
