"""Students built from a teacher: copied layers, layer maps, narrow students and their projections."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from edgebert.config import TRIPLE_LOSS  # the losses these tests were written for (a teacher without an MLM head gets cosine-only by default)
from edgebert.distill.student import (
    StudentSpec,
    build_student,
    default_layer_map,
    make_projections,
    parse_layer_map,
    principal_basis,
    resolve_shape,
)
from edgebert.errors import UserError
from edgebert.families import BERT


@pytest.fixture(scope="module")
def teacher4(tmp_path_factory: pytest.TempPathFactory):
    """A 4-layer tiny BERT as a masked-LM teacher (random head)."""
    from conftest import build_tiny_bert
    from transformers import BertForMaskedLM

    path = build_tiny_bert(tmp_path_factory.mktemp("t4") / "teacher", layers=4, seed=3)
    return BertForMaskedLM.from_pretrained(path).eval()


def test_default_layer_map_spreads_over_depth() -> None:
    assert default_layer_map(6, 3) == [0, 3, 5]
    assert default_layer_map(12, 6) == [0, 2, 4, 7, 9, 11]  # DistilBERT-like spread, last layer included
    assert default_layer_map(4, 4) == [0, 1, 2, 3]
    assert default_layer_map(6, 1) == [5]
    assert parse_layer_map("0, 2,4") == [0, 2, 4] and parse_layer_map(None) is None
    with pytest.raises(UserError):
        parse_layer_map("0,two")


def test_distilbert_student_copies_layers_embeddings_and_head(teacher4) -> None:
    student, shape, init = build_student(teacher4, StudentSpec(layers=2, layer_map=[1, 3]), BERT)
    assert shape.kind == "distilbert" and init["random_tensors"] == 0
    t_sd, s_sd = teacher4.state_dict(), student.state_dict()
    for i, t in enumerate([1, 3]):
        for name, tensor in student.bert.encoder.layer[i].state_dict().items():
            assert torch.equal(tensor, teacher4.bert.encoder.layer[t].state_dict()[name]), name
    for key in s_sd:
        if key.startswith(("bert.embeddings.", "cls.")):
            assert torch.equal(s_sd[key], t_sd[key]), key
    assert student.cls.predictions.decoder.weight is student.bert.embeddings.word_embeddings.weight
    assert student.config.num_hidden_layers == 2


def test_narrow_student_projects_embeddings_and_needs_projections(teacher4) -> None:
    student, shape, init = build_student(teacher4, StudentSpec(layers=2, hidden=16, heads=2, ffn=32), BERT)
    assert shape.kind == "tinybert" and student.config.hidden_size == 16
    word = teacher4.bert.embeddings.word_embeddings.weight
    expected = word @ principal_basis(word, 16)
    assert torch.allclose(student.bert.embeddings.word_embeddings.weight, expected, atol=1e-5)
    assert torch.equal(student.cls.predictions.bias, teacher4.cls.predictions.bias)
    assert "bert.embeddings.word_embeddings.weight" in init["projected_embeddings"]
    proj = make_projections(16, 32, 1)
    assert proj is not None and make_projections(32, 32, 1) is None


def test_projection_path_trains(teacher4) -> None:
    from edgebert.distill.losses import cosine_loss
    from edgebert.distill.trainer import DistillationModel

    student, shape, _ = build_student(teacher4, StudentSpec(layers=1, hidden=16, heads=4), BERT)
    model = DistillationModel(student, BERT, [(1, 4)], make_projections(16, 32, 1))
    ids = torch.randint(5, 100, (2, 7))
    mask = torch.ones_like(ids)
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    assert out["hidden"][0].shape == (2, 7, 32) and out["logits"].shape == (2, teacher4.config.vocab_size)
    with torch.no_grad():
        target = teacher4.bert(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[4]
    cosine_loss(out["hidden"][0], target, mask).backward()
    assert model.projections[0].weight.grad is not None and model.projections[0].weight.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (StudentSpec(layers=5), "deeper than the teacher"),
        (StudentSpec(layers=0), "at least 1"),
        (StudentSpec(layers=2, hidden=64), "wider than the teacher"),
        (StudentSpec(layers=2, hidden=30, heads=4), "not divisible"),
        (StudentSpec(layers=2, ffn=128), "wider than the teacher"),
        (StudentSpec(layers=2, layer_map=[0, 9]), "outside the teacher"),
        (StudentSpec(layers=3, layer_map=[0, 1]), "2 entries"),
    ],
)
def test_impossible_students_are_user_errors(teacher4, spec: StudentSpec, message: str) -> None:
    with pytest.raises(UserError, match=message):
        resolve_shape(teacher4.config, spec, BERT)


def test_student_at_init_is_kept_when_no_checkpoint_beats_it(tmp_path: Path, tiny_corpus: Path) -> None:
    """keep-best includes the student before training: a run that cannot beat it writes the initial student. The gold
    scores are the teacher's own similarities, so the student at initialisation (all of the teacher's layers) ranks
    the pairs perfectly (Spearman 1) and no checkpoint can score higher, on any CPU's arithmetic."""
    from conftest import build_tiny_bert
    from safetensors.torch import load_file

    from edgebert.distill import distill
    from edgebert.modelio import load_model
    from edgebert.parity import encode, torch_reference

    teacher = build_tiny_bert(tmp_path / "teacher", layers=2, seed=5)
    corpus = tiny_corpus
    sts = tmp_path / "sts.csv"
    texts = [("the dog plays", "a dog is playing"), ("the cat", "hello world"), ("music on stage", "guitar music"),
             ("the man", "the woman"), ("the quick brown fox", "a lazy dog"), ("love the app", "great app")]  # fmt: skip
    loaded = load_model(teacher)
    embed = lambda text: torch_reference(loaded.embedder, encode(loaded.tokenizer, [text], 24, pad_to_seq_len=False))["sentence_embedding"][0]  # noqa: E731
    cosines = [float(embed(a) @ embed(b)) for a, b in texts]
    assert len(set(cosines)) == len(cosines)
    sts.write_text("".join(f"{a},{b},{5 * c:.6f}\n" for (a, b), c in zip(texts, cosines)))
    out = tmp_path / "student"
    report = distill(
        teacher, corpus, out, student_layers=2, steps=4, batch_size=4, seq_len=24, lr=5.0, warmup_ratio=0.0,
        head_steps=2, head_batch_size=4, save_steps=2, eval_sts=sts, eval_steps=2, logging_steps=1,
        cache_dir=tmp_path / "cache", quiet=True, **TRIPLE_LOSS,
    )  # fmt: skip
    scores = report.manifest["metrics"]["sts_spearman"]
    assert scores["student_init"] == pytest.approx(1.0) and scores["best_trained"] <= scores["student_init"]
    assert scores["kept"] == "init" and scores["student_final"] == scores["student_init"]
    saved, source = load_file(str(out / "model.safetensors")), load_file(str(teacher / "model.safetensors"))
    for key in ("encoder.layer.0.output.dense.weight", "embeddings.word_embeddings.weight"):
        assert torch.equal(saved[f"bert.{key}"], source[key]), key
