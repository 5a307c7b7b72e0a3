"""Distillation under `accelerate launch` with two CPU processes (gloo): the teacher-output cache computed in two
shares equals one process's, the student is written once, and the run reports once."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgebert.distill.processes import Processes

COSINE = ["--alpha-mlm", "0", "--alpha-ce", "0", "--mlm-probability", "0", "--alpha-cos", "1", "--alpha-pooled", "1"]
RUN = ["--steps", "4", "--batch-size", "4", "--seq-len", "24", "--student-layers", "2", "--save-steps", "2", *COSINE]


@pytest.fixture(scope="module")
def teacher_and_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from conftest import WORDS, build_tiny_bert

    root = tmp_path_factory.mktemp("processes")
    rng = random.Random(3)
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) for _ in range(41)) + "\n")
    return build_tiny_bert(root / "teacher", layers=3, seed=2), corpus


def _launch(args: list[str], processes: int) -> subprocess.CompletedProcess[str]:
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "0"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([*launcher, "-m", "edgebert.cli", *args], capture_output=True, text=True, env=env, timeout=600)


def _entry(cache: Path) -> Path:
    (entry,) = [p for p in cache.iterdir() if (p / "meta.json").is_file()]
    return entry


def test_two_processes_share_the_cache_and_write_the_student_once(teacher_and_corpus: tuple[Path, Path], tmp_path: Path) -> None:
    from edgebert.distill import distill

    teacher, corpus = teacher_and_corpus
    out, cache = tmp_path / "student", tmp_path / "cache"
    result = _launch(["distill", "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out), "--teacher-cache", str(cache), *RUN], 2)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("student: ") == 1, result.stdout  # the main process reports, the other one does not
    assert result.stderr.count("[distill] student written") == 1
    assert "in 2 shares, one per process" in result.stderr
    manifest = json.loads((out / "edgebert.json").read_text())
    assert manifest["distill"]["processes"] == 2
    assert manifest["distill"]["teacher_cache"]["built_by_processes"] == 2
    assert manifest["distill"]["steps"] == 4
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no building directory left

    single = tmp_path / "single-cache"
    distill(teacher, corpus, tmp_path / "single", teacher_cache=single, quiet=True, steps=1, batch_size=4, seq_len=24,
            student_layers=2, alpha_mlm=0, alpha_ce=0, mlm_probability=0, alpha_cos=1, alpha_pooled=1)  # fmt: skip
    shared, alone = _entry(cache), _entry(single)
    assert shared.name == alone.name  # the same key: same teacher, text and layers
    for name in sorted(p.name for p in alone.glob("*.npy")):
        a, b = np.load(shared / name), np.load(alone / name)
        assert a.shape == b.shape and np.abs(a.astype(np.float32) - b.astype(np.float32)).max() < 2e-3, name  # fp16 tokens
    assert np.abs(np.load(shared / "pooled.npy")).sum(axis=1).min() > 0  # both shares' rows were written


def test_two_processes_distil_across_tokenizers_with_the_targets_in_shares(
    teacher_and_corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    """An MPNet sentence embedder into a BERT student of another tokenizer (--across-tokenizers) under two processes:
    the teacher's targets are computed in two shares and joined into the one-process cache, both losses train
    (the learned projection too), and the student is written once."""
    from conftest import build_tiny_bert
    from model_zoo import add_st_stack, build_mpnet

    from edgebert.distill import distill

    _, corpus = teacher_and_corpus
    teacher = add_st_stack(build_mpnet(tmp_path / "mpnet", seed=2), dense_out=48)
    student = add_st_stack(build_tiny_bert(tmp_path / "bert", seed=5))
    out, cache = tmp_path / "student", tmp_path / "cache"
    args = ["--across-tokenizers", "--student-init", str(student), "--steps", "4", "--batch-size", "4", "--seq-len", "24",
            "--save-steps", "2", "--alpha-pooled", "1", "--alpha-sim", "1"]  # fmt: skip
    result = _launch(["distill", "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out), "--cache-dir", str(cache), *args], 2)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("[distill] student written") == 1
    assert "computed in 2 shares, one per process" in result.stderr
    manifest = json.loads((out / "edgebert.json").read_text())
    assert manifest["distill"]["processes"] == 2 and manifest["distill"]["targets"]["built_by_processes"] == 2
    assert manifest["distill"]["frozen_parameters"] == 32 * 32 + 32  # the BERT pooler: the sentence stack never reads it
    (shared,) = (cache / "sentence-targets").iterdir()  # no share left beside the joined cache

    alone = tmp_path / "single-cache"
    distill(teacher, corpus, tmp_path / "single", student_init=student, across_tokenizers=True, cache_dir=alone, quiet=True,
            steps=1, batch_size=4, seq_len=24, save_steps=1)  # fmt: skip
    (single,) = (alone / "sentence-targets").iterdir()
    assert shared.name == single.name  # the same key: same teacher, length and texts
    a, b = np.load(shared), np.load(single)
    assert a.shape == b.shape == (41, 48) and np.abs(a - b).max() < 1e-4
    assert np.abs(a).sum(axis=1).min() > 0  # both shares' rows were written


def test_a_share_is_every_count_th_row() -> None:
    rows = list(range(11))
    shares = [Processes(i, 3).share(rows) for i in range(3)]
    assert sorted(r for s in shares for r in s) == rows
    assert shares[1] == [1, 4, 7, 10]
    assert Processes().share(rows) == rows and Processes().main


def test_an_unused_head_is_frozen_but_its_tied_decoder_trains(tiny_bert: Path) -> None:
    from transformers import BertForMaskedLM

    from edgebert.distill.student import freeze_unused_head
    from edgebert.families import BERT

    model = BertForMaskedLM.from_pretrained(tiny_bert)
    frozen = freeze_unused_head(model, BERT)
    word = model.bert.embeddings.word_embeddings.weight
    assert model.cls.predictions.decoder.weight is word and word.requires_grad
    assert frozen == sum(p.numel() for n, p in model.named_parameters() if n.startswith("cls.") and p is not word) > 0
    assert not model.cls.predictions.transform.dense.weight.requires_grad
