"""The teacher-output cache: same losses as a live teacher, reused by a second run, invalidated by new text or teacher."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from edgebert.distill import distill
from edgebert.errors import UserError

COSINE = dict(alpha_mlm=0, alpha_ce=0, mlm_probability=0, alpha_cos=1, alpha_pooled=1, alpha_sim=1, cos_layers="mapped")
FAST = dict(steps=4, batch_size=4, seq_len=24, save_steps=2, logging_steps=1, quiet=True, student_layers=2, **COSINE)


def _corpus(path: Path, seed: int) -> Path:
    from conftest import WORDS

    rng = random.Random(seed)
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) for _ in range(40)) + "\n")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _corpus(tmp_path_factory.mktemp("corpus") / "c.txt", 0)


@pytest.fixture(scope="module")
def teacher3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("t3") / "teacher", layers=3, seed=1)


def _losses(out: Path) -> list[dict[str, float]]:
    return json.loads((out / "edgebert.json").read_text())["metrics"]["losses"]


def _cache_record(out: Path) -> dict:
    return json.loads((out / "edgebert.json").read_text())["distill"]["teacher_cache"]


def test_cached_run_has_the_live_runs_losses_and_is_reused(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    live = distill(teacher3, corpus, tmp_path / "live", **FAST)
    cache = tmp_path / "cache"
    cached = distill(teacher3, corpus, tmp_path / "cached", teacher_cache=cache, **FAST)
    a, b = _losses(tmp_path / "live"), _losses(tmp_path / "cached")
    assert len(a) == len(b) >= 4
    for x, y in zip(a, b):
        for term in ("loss_cos", "loss_pooled", "loss_sim"):
            assert x[term] > 0
            assert y[term] == pytest.approx(x[term], rel=2e-3, abs=1e-4), (term, x, y)
    first = _cache_record(tmp_path / "cached")
    assert first["hit"] is False and first["token_layers"] and first["pooled_layer"] == 3
    assert cached.manifest["recipe"]["teacher_outputs"] == "cache" and "teacher_outputs" not in live.manifest["recipe"]
    again = distill(teacher3, corpus, tmp_path / "again", teacher_cache=cache, **FAST)
    second = _cache_record(tmp_path / "again")
    assert second["hit"] is True and second["key"] == first["key"]
    assert _losses(tmp_path / "again") == b  # the same targets from disk: the same run


def test_cached_targets_equal_a_forward_pass(teacher3: Path, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import AutoTokenizer

    from edgebert.data import load_corpus, padding_collator, tokenize_corpus
    from edgebert.distill.teacher import load_teacher_mlm
    from edgebert.distill.teacher_cache import IndexedCollator, IndexedCorpus, INDEX_KEY, live_targets, open_or_build
    from edgebert.modelio import inspect_model_dir

    _, family = inspect_model_dir(teacher3)
    teacher, _ = load_teacher_mlm(teacher3, family)
    tok = AutoTokenizer.from_pretrained(teacher3)
    dataset = tokenize_corpus(load_corpus(corpus), tok, 24)
    cache, record = open_or_build(tmp_path, teacher, family, dataset, padding_collator(tok), "fp", [1, 3], 3, log=lambda m: None)
    assert record["bytes"] > 0 and not record["hit"]
    batch = IndexedCollator(padding_collator(tok))([IndexedCorpus(dataset)[i] for i in (5, 0, 17)])
    live = live_targets(teacher, family, batch, [1, 3], 3)
    got = cache.targets(batch[INDEX_KEY], batch["input_ids"].size(1), torch.device("cpu"))
    assert torch.allclose(got.pooled, live.pooled, atol=1e-6)
    real = batch["attention_mask"].bool()
    for layer in (1, 3):
        assert torch.allclose(got.hidden[layer][real], live.hidden[layer][real], rtol=2e-3, atol=2e-3)

    # fewer layers of the same teacher and text: the same entry, read in part; a layer it lacks: a new entry
    for layers, pooled in (([3], 3), ([], 3), ([1], None)):
        part, again = open_or_build(tmp_path, teacher, family, dataset, padding_collator(tok), "fp", layers, pooled, log=lambda m: None)
        assert again["hit"] and again["dir"] == record["dir"] and part.token_layers == layers and part.pooled_layer == pooled
        sub = part.targets(batch[INDEX_KEY], batch["input_ids"].size(1), torch.device("cpu"))
        assert sorted(sub.hidden) == layers and (sub.pooled is None) == (pooled is None)
        assert all(torch.equal(sub.hidden[i], got.hidden[i]) for i in layers)
    _, other = open_or_build(tmp_path, teacher, family, dataset, padding_collator(tok), "fp", [2], 3, log=lambda m: None, quiet=False)
    assert not other["hit"] and other["dir"] != record["dir"]
    lines = capsys.readouterr().err.strip().splitlines()  # a build shows its progress: counts at every tenth
    assert lines[-1] == f"teacher outputs: {len(dataset)}/{len(dataset)} sequences (100 %), 0 s" and 2 <= len(lines) <= 10, lines


def test_new_corpus_or_teacher_gets_a_new_entry(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    from conftest import build_tiny_bert

    cache = tmp_path / "cache"
    kw = dict(FAST, steps=2)
    distill(teacher3, corpus, tmp_path / "a", teacher_cache=cache, **kw)
    other_text = _corpus(tmp_path / "other.txt", 7)
    distill(teacher3, other_text, tmp_path / "b", teacher_cache=cache, **kw)
    other_teacher = build_tiny_bert(tmp_path / "t2", layers=3, seed=2)
    distill(other_teacher, corpus, tmp_path / "c", teacher_cache=cache, **kw)
    records = [_cache_record(tmp_path / n) for n in "abc"]
    assert [r["hit"] for r in records] == [False, False, False]
    assert len({r["key"] for r in records}) == 3 and len(list(cache.iterdir())) == 3


def test_masked_losses_with_a_cache_are_refused(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--teacher-cache needs unmasked text"):
        distill(teacher3, corpus, tmp_path / "x", teacher_cache=tmp_path / "cache", **dict(FAST, alpha_mlm=1, mlm_probability=0.15))
    assert not (tmp_path / "x").exists() and not (tmp_path / "cache").exists()


def test_a_resumed_cached_run_ends_where_an_uninterrupted_one_ends(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    class CrashAfterSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
            if state.global_step == 2:
                raise RuntimeError("simulated kill after the step-2 checkpoint")

    kw = dict(FAST, teacher_cache=tmp_path / "cache", group_by_length=True)
    distill(teacher3, corpus, tmp_path / "full", **kw)
    with pytest.raises(RuntimeError, match="simulated kill"):
        distill(teacher3, corpus, tmp_path / "part", callbacks=[CrashAfterSave()], **kw)
    distill(teacher3, corpus, tmp_path / "part", resume=True, **kw)
    a, b = load_file(str(tmp_path / "full" / "model.safetensors")), load_file(str(tmp_path / "part" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
