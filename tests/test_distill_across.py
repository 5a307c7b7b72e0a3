"""distill with a --student-init whose tokenizer is not the teacher's: sentence-embedding distillation
(edgebert/distill/across.py), e.g. an MPNet sentence embedder into a BERT-shaped student."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from edgebert.distill import distill
from edgebert.distill.across import OBJECTIVE
from edgebert.errors import UserError

FAST = dict(across_tokenizers=True, steps=12, batch_size=8, seq_len=24, save_steps=6, logging_steps=1, lr=2e-3, quiet=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import WORDS

    rng = random.Random(3)
    path = tmp_path_factory.mktemp("across-corpus") / "c.txt"
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10))) for _ in range(64)) + "\n")
    return path


@pytest.fixture(scope="module")
def mpnet_embedder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny MPNet sentence embedder (mean pooling, Dense to 48, Normalize): its own WordPiece vocabulary."""
    from model_zoo import add_st_stack, build_mpnet

    return add_st_stack(build_mpnet(tmp_path_factory.mktemp("across-t") / "mpnet", seed=2), dense_out=48)


@pytest.fixture(scope="module")
def bert_student(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT sentence embedder (32 wide, mean pooling, Normalize): another tokenizer and width."""
    from conftest import build_tiny_bert
    from model_zoo import add_st_stack

    return add_st_stack(build_tiny_bert(tmp_path_factory.mktemp("across-s") / "bert", seed=5))


@pytest.fixture(scope="module")
def sts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("across-sts") / "sts.csv"
    path.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\nthe man,the woman,2\n")
    return path


def _similarity_gap(student_dir: Path, teacher_dir: Path, texts: list[str]) -> float:
    """Mean squared difference between the student's and the teacher's cosine-similarity matrices over `texts`."""
    from edgebert.modelio import load_sentence_transformer

    s = load_sentence_transformer(student_dir).encode(texts, normalize_embeddings=True)
    t = load_sentence_transformer(teacher_dir).encode(texts, normalize_embeddings=True)
    return float(((s @ s.T - t @ t.T) ** 2).mean())


def test_a_student_with_its_own_tokenizer_learns_the_teachers_sentence_embeddings(
    mpnet_embedder: Path, bert_student: Path, corpus: Path, sts_file: Path, tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "student"
    report = distill(
        mpnet_embedder, corpus, out, student_init=bert_student, alpha_sim=1.0, eval_sts=sts_file, eval_steps=3,
        cache_dir=tmp_path / "cache", **FAST,
    )  # fmt: skip
    manifest = json.loads((out / "edgebert.json").read_text())
    assert manifest["distill"]["objective"] == OBJECTIVE == manifest["recipe"]["objective"]
    assert manifest["recipe"]["losses"] == {"alpha_pooled": 1.0, "alpha_sim": 1.0}
    assert manifest["model"]["family"] == "bert" and manifest["distill"]["targets"]["dim"] == 48
    config = json.loads((bert_student / "config.json").read_text())
    assert (manifest["model"]["hidden_size"], manifest["model"]["layers"]) == (32, config["num_hidden_layers"])
    assert manifest["parent"] == str(mpnet_embedder) and report.out_dir == out
    scores = manifest["metrics"]["sts_spearman"]
    assert {"teacher", "student_init", "best", "kept", "history", "student_final"} <= set(scores)
    assert not (out / "checkpoints").exists()
    # the student keeps its own tokenizer, width and sentence-transformers stack, and loads as a standard model
    assert json.loads((out / "tokenizer.json").read_text())["model"]["vocab"] == json.loads((bert_student / "tokenizer.json").read_text())["model"]["vocab"]
    assert SentenceTransformer(str(out), device="cpu").get_embedding_dimension() == 32
    texts = (corpus.read_text().splitlines())[:32]
    if scores["kept"] != "init":
        assert _similarity_gap(out, mpnet_embedder, texts) < _similarity_gap(bert_student, mpnet_embedder, texts)
    targets = list((tmp_path / "cache" / "sentence-targets").glob("*.npy"))
    assert len(targets) == 1 and np.load(targets[0]).shape == (64, 48)


def test_training_moves_the_student_towards_the_teacher(mpnet_embedder: Path, bert_student: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "student"
    distill(mpnet_embedder, corpus, out, student_init=bert_student, alpha_pooled=0.0, alpha_sim=1.0, cache_dir=tmp_path / "c", **FAST)
    texts = corpus.read_text().splitlines()[:32]
    assert _similarity_gap(out, mpnet_embedder, texts) < 0.8 * _similarity_gap(bert_student, mpnet_embedder, texts)


def test_a_head_pruned_student_loads_trains_and_keeps_its_shape(mpnet_embedder: Path, bert_student: Path, corpus: Path, tmp_path: Path) -> None:
    """A head-pruned student (stored at the stock shapes, its removed heads zero) loads in plain sentence-transformers as
    in edgebert's loader, which narrows it; distilled, it keeps its narrowed shape."""
    from sentence_transformers import SentenceTransformer

    from edgebert.compress.compress import compress
    from edgebert.modelio import load_sentence_transformer

    pruned = compress(bert_student, tmp_path / "pruned", heads_to_prune={"0": [1, 2], "1": [0]}, quiet=True).out_dir
    sample = corpus.read_text().splitlines()[:4]
    plain = SentenceTransformer(str(pruned), device="cpu").encode(sample)
    np.testing.assert_allclose(plain, load_sentence_transformer(pruned).encode(sample), atol=1e-5)
    out = tmp_path / "student"
    distill(mpnet_embedder, corpus, out, student_init=pruned, alpha_sim=1.0, cache_dir=tmp_path / "c", **FAST)
    manifest = json.loads((out / "edgebert.json").read_text())
    assert manifest["model"]["heads_per_layer"] == [2, 3]
    texts = corpus.read_text().splitlines()[:8]
    np.testing.assert_allclose(
        load_sentence_transformer(out).encode(texts), load_sentence_transformer(out).encode(texts), atol=1e-6
    )
    assert _similarity_gap(out, mpnet_embedder, texts) != _similarity_gap(pruned, mpnet_embedder, texts)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(alpha_cos=1.0), "needs one tokenizer"),
        (dict(alpha_mlm=2.0), "needs one tokenizer"),
        (dict(weight_grid="onnx-int4"), "--weight-grid is not available"),
        (dict(alpha_pooled=0.0, alpha_sim=0.0), "nothing to learn"),
        (dict(student_layers=1), "cannot be combined with --student-init"),
    ],
)
def test_what_needs_one_tokenizer_is_refused_and_nothing_is_written(
    mpnet_embedder: Path, bert_student: Path, corpus: Path, tmp_path: Path, kwargs: dict, message: str
) -> None:
    out = tmp_path / "student"
    with pytest.raises(UserError, match=message):
        distill(mpnet_embedder, corpus, out, student_init=bert_student, cache_dir=tmp_path / "c", **{**FAST, **kwargs})
    assert not out.exists()


def test_without_the_flag_another_tokenizer_is_refused_naming_it(bert_student: Path, corpus: Path, tmp_path: Path) -> None:
    """Another tokenizer is never trained on silently: the refusal names --across-tokenizers."""
    from model_zoo import add_st_stack, build_mpnet

    teacher = add_st_stack(build_mpnet(tmp_path / "mpnet", seed=2))  # mean pooling: a teacher distill itself takes
    with pytest.raises(UserError, match="different tokenizer vocabulary.*add --across-tokenizers"):
        distill(teacher, corpus, tmp_path / "out", student_init=bert_student, **{**FAST, "across_tokenizers": False})
    assert not (tmp_path / "out").exists()


def test_the_flag_needs_a_student_init(mpnet_embedder: Path, corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="give it as --student-init"):
        distill(mpnet_embedder, corpus, tmp_path / "out", **FAST)


def test_a_classifier_teacher_across_tokenizers_is_refused(bert_student: Path, corpus: Path, tmp_path: Path) -> None:
    from model_zoo import build_mpnet

    teacher = build_mpnet(tmp_path / "cls", head="sequence-classification")
    with pytest.raises(UserError, match="sentence embeddings only"):
        distill(teacher, corpus, tmp_path / "out", student_init=bert_student, **FAST)
    assert not (tmp_path / "out").exists()


def test_the_cli_runs_it(mpnet_embedder: Path, bert_student: Path, corpus: Path, tmp_path: Path, run_cli) -> None:
    out = tmp_path / "student"
    code, _, err = run_cli(
        "distill", "--teacher", str(mpnet_embedder), "--corpus", str(corpus), "--out", str(out), "--student-init", str(bert_student),
        "--steps", "2", "--batch-size", "4", "--seq-len", "16", "--save-steps", "1", "--cache-dir", str(tmp_path / "c"),
        "--across-tokenizers",
    )  # fmt: skip
    assert code == 0, err
    assert "objective: sentence embeddings across tokenizers" in err
    assert (out / "edgebert.json").exists()


def test_the_projection_starts_at_the_least_squares_map(mpnet_embedder: Path, bert_student: Path, corpus: Path) -> None:
    """A fitted projection already maps the student's embeddings close to the teacher's: a lower loss than at random."""
    from edgebert.distill.across import fit_projection, load_sentence_model, target_loss

    texts = corpus.read_text().splitlines()
    teacher, student = load_sentence_model(mpnet_embedder, 24), load_sentence_model(bert_student, 24)
    targets = teacher.encode(texts, convert_to_numpy=True)
    loss = target_loss(student, targets.shape[1], 1.0, 0.0)
    features = [student.tokenize(texts)]
    labels = torch.from_numpy(targets)
    with torch.no_grad():
        at_random = float(loss(features, labels))
        fit_projection(loss, student, texts, targets)
        fitted = float(loss(features, labels))
    assert fitted < at_random and fitted < 0.5 * at_random + 0.05


def test_resume_continues_from_the_last_checkpoint_and_refuses_other_arguments(
    mpnet_embedder: Path, bert_student: Path, corpus: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    args = dict(student_init=bert_student, alpha_pooled=0.0, alpha_sim=1.0, cache_dir=tmp_path / "c", **{**FAST, "steps": 4, "save_steps": 2})
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    distill(mpnet_embedder, corpus, whole, **args)
    distill(mpnet_embedder, corpus, cut, keep_checkpoints=True, **args)
    for entry in cut.iterdir():  # as if killed after the step-2 checkpoint: nothing but that checkpoint left
        if entry.name != "checkpoints":
            entry.unlink() if entry.is_file() else shutil.rmtree(entry)
    shutil.rmtree(cut / "checkpoints" / "checkpoint-4")
    with pytest.raises(UserError, match="arguments differ"):
        distill(mpnet_embedder, corpus, cut, resume=True, **{**args, "lr": 1e-3})
    distill(mpnet_embedder, corpus, cut, resume=True, **args)
    a, b = load_file(str(whole / "model.safetensors")), load_file(str(cut / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
