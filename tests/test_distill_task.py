"""Task distillation: a tiny BERT sequence classifier distilled into a 1-layer classifier student."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from edgebert import config as cfg
from edgebert.distill import distill
from edgebert.distill.losses import soft_target_loss
from edgebert.errors import UserError

FAST = dict(steps=4, batch_size=4, seq_len=24, save_steps=2, logging_steps=1, quiet=True)
ID2LABEL = {0: "NEGATIVE", 1: "POSITIVE"}


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from model_zoo import build_bert

    return build_bert(tmp_path_factory.mktemp("cls") / "teacher", head="sequence-classification", num_labels=2, id2label=ID2LABEL, seed=3)


@pytest.fixture()
def corpus(tiny_corpus: Path) -> Path:
    return tiny_corpus


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SST-2 style train split: sentence<TAB>label (0/1) with a header."""
    from conftest import write_labelled_tsv

    return write_labelled_tsv(tmp_path_factory.mktemp("labels") / "train.tsv", 24, seed=1)


def test_soft_target_loss_is_kl_at_t_times_t_squared_on_known_logits() -> None:
    student = torch.tensor([[1.0, -1.0], [0.5, 0.0]])
    teacher = torch.tensor([[2.0, 0.0], [-1.0, 1.0]])
    t = 2.0

    def softmax(row: list[float]) -> list[float]:
        e = [math.exp(x / t) for x in row]
        return [v / sum(e) for v in e]

    expected = 0.0
    for s_row, t_row in zip(student.tolist(), teacher.tolist()):
        p, q = softmax(t_row), softmax(s_row)
        expected += sum(a * math.log(a / b) for a, b in zip(p, q))
    expected = expected / 2 * t * t
    assert soft_target_loss(student, teacher, t).item() == pytest.approx(expected, rel=1e-6)
    assert soft_target_loss(teacher, teacher, t).item() == pytest.approx(0.0, abs=1e-7)


def test_auto_chooses_task_distillation_for_a_classifier() -> None:
    none = {k: None for k in cfg.LOSS_OPTIONS}
    chosen, reason = cfg.auto_losses(none, teacher_has_mlm_head=False, classifier=True)
    assert chosen == {**cfg.TASK_LOSS, "mlm_probability": 0.0}
    assert reason.startswith("auto: task distillation")
    triple, why = cfg.auto_losses(none, teacher_has_mlm_head=True)
    assert triple["alpha_mlm"] == cfg.TRIPLE_LOSS["alpha_mlm"] and "triple" in why


def test_classifier_teacher_distils_into_a_classifier_student(classifier: Path, corpus: Path, labelled: Path, tmp_path: Path) -> None:
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from edgebert.heads import detect_task

    out = tmp_path / "student"
    report = distill(classifier, corpus, out, student_layers=1, eval_labels=str(labelled), **FAST)
    m = report.manifest
    assert m["task"] == "text-classification"
    assert m["recipe"]["loss_choice"].startswith("auto: task distillation")
    assert m["recipe"]["losses"]["alpha_ce"] == cfg.TASK_LOSS["alpha_ce"] and m["recipe"]["losses"]["alpha_mlm"] == 0
    assert m["outputs"] == [{"name": "logits", "shape": ["batch", 2], "dtype": "float32", "labels": ["NEGATIVE", "POSITIVE"]}]
    assert m["model"]["id2label"] == {"0": "NEGATIVE", "1": "POSITIVE"}
    assert m["model"]["architecture"] == "BertForSequenceClassification"
    losses = [e for e in m["metrics"]["losses"] if "loss_ce" in e]
    assert losses and all("loss_mlm" not in e for e in losses) and all("loss_cos" in e for e in losses)
    scores = m["metrics"]["eval_labels"]
    assert scores["teacher"] is not None and 0 <= scores["student_final"] <= 1 and 0 <= scores["agreement_final"] <= 1
    assert scores["examples"] == 24 and [h["step"] for h in scores["history"]] == [2, 4]
    # a standard transformers classifier dir: the teacher's labels, one layer, the teacher's classifier at init
    config = AutoConfig.from_pretrained(out)
    assert config.architectures == ["BertForSequenceClassification"] and config.num_hidden_layers == 1
    assert {int(k): v for k, v in config.id2label.items()} == ID2LABEL
    assert detect_task(json.loads((out / "config.json").read_text()), (out / "modules.json").exists()) == "text-classification"
    student = AutoModelForSequenceClassification.from_pretrained(out).eval()
    assert student.classifier.out_features == 2
    assert m["distill"]["init"]["classifier_random"] == []
    assert "classifier.weight" in m["distill"]["init"]["classifier_from_teacher"]


def test_the_student_starts_from_the_teachers_classifier(classifier: Path, corpus: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    report = distill(classifier, corpus, tmp_path / "s", student_layers=1, lr=1e-12, **FAST)
    student, teacher = load_file(str(tmp_path / "s" / "model.safetensors")), load_file(str(classifier / "model.safetensors"))
    for key in ("classifier.weight", "bert.pooler.dense.weight", "bert.embeddings.word_embeddings.weight"):
        assert torch.allclose(student[key], teacher[key], atol=1e-6), key
    assert report.manifest["metrics"]["eval_labels"] is None  # no --eval-labels: the last step is kept


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(alpha_mlm=1.0), "no masked-LM head for --alpha-mlm"),
        (dict(eval_sts="x.csv"), "chosen on --eval-labels"),
        (dict(alpha_sim=1.0), "--alpha-sim compares sentence embeddings"),
        (dict(teacher_cache="cache", alpha_ce=0.0), "--teacher-cache needs unmasked text"),
    ],
)
def test_bad_task_input_is_one_line_and_writes_nothing(classifier: Path, corpus: Path, tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        distill(classifier, corpus, tmp_path / "s", student_layers=1, **{**FAST, **kwargs})
    assert not (tmp_path / "s").exists()


def test_eval_labels_need_a_classifier_and_known_labels(classifier: Path, corpus: Path, tmp_path: Path) -> None:
    from conftest import build_tiny_bert

    encoder = build_tiny_bert(tmp_path / "enc")
    labels = tmp_path / "l.tsv"
    labels.write_text("sentence\tlabel\nthe dog\t1\n")
    with pytest.raises(UserError, match="--eval-labels needs a sequence-classifier teacher"):
        distill(encoder, corpus, tmp_path / "a", eval_labels=str(labels), **FAST)
    labels.write_text("sentence\tlabel\nthe dog\tneutral\n")
    with pytest.raises(UserError, match="label 'neutral' is neither a label of the model"):
        distill(classifier, corpus, tmp_path / "b", eval_labels=str(labels), **FAST)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("family", "kept"),
    [("deberta-v2", ("classifier.weight", "pooler.dense.weight", "deberta.encoder.rel_embeddings.weight")),
     ("modernbert", ("classifier.weight", "head.dense.weight", "model.final_norm.weight")),
     ("xlnet", ("logits_proj.weight", "sequence_summary.summary.weight", "transformer.word_embedding.weight"))],
)  # fmt: skip
def test_a_2026_family_classifier_distils_into_a_smaller_classifier_of_its_family(
    corpus: Path, labelled: Path, tmp_path: Path, family: str, kept: tuple[str, ...]
) -> None:
    """DeBERTa-v2/v3 (relative positions shared by every layer, a ContextPooler head), ModernBERT (pre-norm, a final
    norm, its own head) and XLNet (its last-token summary head, text wrapped as `... <sep> <cls>` with <cls> in segment
    2 and padded on the left, as its tokenizer does): the 1-layer student keeps the teacher's shared tables and head,
    and exports at parity."""
    from safetensors.torch import load_file

    from edgebert.export import export
    from model_zoo import BUILDERS, build_xlnet

    build = build_xlnet if family == "xlnet" else BUILDERS[family]
    teacher = build(tmp_path / "teacher", head="sequence-classification", num_labels=2, id2label=ID2LABEL, seed=3)
    report = distill(teacher, corpus, tmp_path / "s", student_layers=1, lr=1e-12, eval_labels=str(labelled), **FAST)
    assert report.manifest["model"]["family"] == family and report.manifest["model"]["layers"] == 1
    student, source = load_file(str(tmp_path / "s" / "model.safetensors")), load_file(str(teacher / "model.safetensors"))
    for key in kept:
        assert torch.allclose(student[key], source[key], atol=1e-6), key
    exported = export("onnx", model=tmp_path / "s", out=tmp_path / "onnx", quiet=True)
    assert exported.manifest["task"] == "text-classification" and exported.parity["passed"]


def test_an_xlnet_encoder_is_not_distilled_through_its_permutation_lm_head(corpus: Path, tmp_path: Path) -> None:
    """XLNet's LM head was trained on permuted tokens, not masked ones: asking for masked-LM distillation from it is
    refused with one line naming what works; by default its encoder is distilled on hidden states."""
    from model_zoo import build_xlnet

    teacher = build_xlnet(tmp_path / "xlnet")
    with pytest.raises(UserError, match="predicts permuted tokens, not masked ones: distil a xlnet classifier") as info:
        distill(teacher, corpus, tmp_path / "a", alpha_mlm=1.0, **FAST)
    assert "\n" not in str(info.value) and not (tmp_path / "a").exists()
    report = distill(teacher, corpus, tmp_path / "b", student_layers=1, **FAST)
    assert report.manifest["model"]["family"] == "xlnet" and report.manifest["model"]["layers"] == 1
    assert report.manifest["recipe"]["losses"]["alpha_mlm"] == 0 and report.manifest["recipe"]["losses"]["alpha_ce"] == 0
