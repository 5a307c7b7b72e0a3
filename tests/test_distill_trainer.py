"""End to end on tiny BERTs: the student directory, resume equivalence, bad input, and the real teacher."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from edgebert.config import TRIPLE_LOSS  # the losses these tests were written for (a teacher without an MLM head gets cosine-only by default)
from edgebert.distill import distill
from edgebert.errors import UserError

FAST = dict(steps=4, batch_size=4, seq_len=24, head_steps=3, head_batch_size=4, save_steps=2, logging_steps=1, quiet=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import WORDS

    rng = random.Random(0)
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) for _ in range(60)) + "\n")
    return path


@pytest.fixture(scope="module")
def teacher3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("t3") / "teacher", layers=3, seed=1)


@pytest.fixture(scope="module")
def sts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sts") / "sts.csv"
    path.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\nthe man,the woman,2\n")
    return path


def _weights(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


def test_student_dir_is_a_standard_hf_and_sentence_transformers_dir(teacher3: Path, corpus: Path, sts_file: Path, tmp_path: Path) -> None:
    from transformers import AutoModel, AutoModelForMaskedLM

    from edgebert.modelio import load_model

    out = tmp_path / "student"
    report = distill(
        teacher3, corpus, out, student_layers=2, eval_sts=sts_file, eval_steps=2, cache_dir=tmp_path / "cache", **TRIPLE_LOSS, **FAST
    )
    assert AutoModel.from_pretrained(out).config.num_hidden_layers == 2
    assert AutoModelForMaskedLM.from_pretrained(out) is not None
    loaded = load_model(out)  # what `edgebert export --model` uses
    assert loaded.pooling == "mean" and loaded.config.hidden_size == 32
    assert json.loads((out / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    assert [m["path"] for m in json.loads((out / "modules.json").read_text())][:2] == ["", "1_Pooling"]
    m = json.loads((out / "edgebert.json").read_text())
    assert (m["kind"], m["step"]) == ("model", "distill") and m["distill"]["steps"] == 4 and m["parent"] == str(teacher3)
    assert m["recipe"]["student"]["layer_map"] == [0, 2] and m["outputs"][0] == {"name": "sentence_embedding", "dim": 32, "normalized": True}
    assert m["metrics"]["steps_per_second"] > 0 and m["metrics"]["wall_time_s"] > 0
    assert {"loss_mlm", "loss_ce", "loss_cos"} <= set(m["metrics"]["losses"][0])
    sts = m["metrics"]["sts_spearman"]
    assert {"teacher", "student_init", "student_final"} <= set(sts) and len(sts["history"]) == 2
    assert not (out / "checkpoints").exists()
    assert report.out_dir == out.absolute()


def test_tinybert_student_with_pooled_loss(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "narrow"
    distill(teacher3, corpus, out, student_layers=2, student_hidden=16, student_heads=2, alpha_pooled=1.0,
            cos_layers="mapped", cache_dir=tmp_path / "cache", **FAST)
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"]) == (16, 2, 32)
    assert not any(k.startswith("projections") for k in _weights(out))  # projections are dropped
    losses = json.loads((out / "edgebert.json").read_text())["metrics"]["losses"]
    assert "loss_pooled" in losses[0]


class _Crash(Exception):
    pass


@pytest.mark.parametrize("group_by_length", [False, True])
def test_resume_ends_where_an_uninterrupted_run_ends(teacher3: Path, corpus: Path, tmp_path: Path, group_by_length: bool) -> None:
    from transformers import TrainerCallback

    class CrashAfterSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
            if state.global_step == 2:
                raise _Crash("simulated kill after the step-2 checkpoint")

    kw = dict(FAST, steps=6, cache_dir=tmp_path / "cache", student_layers=2, group_by_length=group_by_length)
    full = tmp_path / "full"
    manifest = distill(teacher3, corpus, full, **kw).manifest
    assert manifest["recipe"]["group_by_length"] is group_by_length
    part = tmp_path / "part"
    with pytest.raises(_Crash):
        distill(teacher3, corpus, part, callbacks=[CrashAfterSave()], **kw)
    assert (part / "checkpoints" / "checkpoint-2").is_dir() and not (part / "edgebert.json").exists()
    with pytest.raises(UserError, match="--resume"):
        distill(teacher3, corpus, part, **kw)
    report = distill(teacher3, corpus, part, resume=True, **kw)
    assert report.manifest["distill"]["resumed_from"].endswith("checkpoint-2")
    a, b = _weights(full), _weights(part)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(corpus="MISSING"), "does not exist"),
        (dict(corpus="EMPTY"), "empty"),
        (dict(student_layers=4), "deeper than the teacher"),
        (dict(student_hidden=64), "wider than the teacher"),
        (dict(student_hidden=30, student_heads=4), "not divisible"),
        (dict(alpha_mlm=0, alpha_ce=0, alpha_cos=0, alpha_pooled=0), "all loss weights are zero"),
        (dict(eval_sts="MISSING_STS"), "does not exist"),
        (dict(steps=0), "--steps"),
        (dict(threads=-1), "--threads must be at least 1"),
        (dict(warmup_ratio=5.0), r"--warmup-ratio must be a finite number in \[0, 1\)"),
        (dict(lr=float("nan")), "--lr must be a finite number"),
        (dict(lr=float("inf")), "--lr must be a finite number"),
        (dict(save_steps=-1), "--save-steps must be at least 1"),
        (dict(eval_steps=0), "--eval-steps must be at least 1"),
        (dict(logging_steps=-5), "--logging-steps must be at least 1"),
        (dict(temperature=float("nan")), "--temperature must be a finite number"),
        (dict(alpha_cos=float("inf")), "--alpha-cos must be a finite number"),
        (dict(seq_len="64"), "--seq-len must be an integer"),
        (dict(steps=2.5), "--steps must be an integer"),
        (dict(seed=-1), "--seed must be at least 0"),
        (dict(max_passages=0), "--max-passages must be at least 1"),
        (dict(student_layers=0), "--student-layers must be at least 1"),
        (dict(corpus="BINARY"), "is not UTF-8 text"),
        (dict(eval_sts="BAD_STS"), "outside the STS-B scale"),
        (dict(lr="high"), "--lr must be a number"),
        (dict(cache_dir=5), "--cache-dir must be a path"),
        (dict(eval_sts=3), "--eval-sts must be a path"),
    ],
)
def test_bad_input_is_one_clear_error_and_writes_nothing(teacher3: Path, corpus: Path, tmp_path: Path, kwargs: dict, message: str) -> None:
    (tmp_path / "empty.txt").write_text("\n\n")
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "bad-sts.csv").write_text("a,b,1\nc,d,500\n")
    subs = {"MISSING": tmp_path / "no.txt", "EMPTY": tmp_path / "empty.txt", "MISSING_STS": tmp_path / "no.csv",
            "BINARY": tmp_path / "binary.txt", "BAD_STS": tmp_path / "bad-sts.csv"}  # fmt: skip
    kwargs = {k: subs.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    args = dict(FAST, student_layers=2, cache_dir=tmp_path / "cache")
    args.update(kwargs)
    corpus_arg = args.pop("corpus", corpus)
    out = tmp_path / "out"
    with pytest.raises(UserError, match=message) as info:
        distill(teacher3, corpus_arg, out, **args)
    assert "\n" not in str(info.value)
    assert not out.exists() and not (tmp_path / "cache").exists()


def test_existing_out_needs_force_or_resume(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(UserError, match="exists and is not empty"):
        distill(teacher3, corpus, out, student_layers=2, cache_dir=tmp_path / "cache", **FAST)
    assert (out / "keep.txt").exists()
    distill(teacher3, corpus, out, student_layers=2, force=True, cache_dir=tmp_path / "cache", **FAST)
    assert not (out / "keep.txt").exists() and (out / "edgebert.json").exists()


def test_cli_command_parses_and_reports_user_errors(teacher3: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import argparse

    from edgebert.commands.distill import DistillCommand

    parser = argparse.ArgumentParser()
    DistillCommand.add_arguments(parser)
    args = parser.parse_args(["--teacher", str(teacher3), "--corpus", str(tmp_path / "none.txt"), "--out", str(tmp_path / "o")])
    with pytest.raises(UserError, match="does not exist"):
        DistillCommand.run(args)
    assert DistillCommand.name == "distill" and not (tmp_path / "o").exists()


@pytest.mark.integration
def test_packaged_teacher_few_steps(packaged_teacher: Path, shared_data: Path, tmp_path: Path) -> None:
    import gzip

    from edgebert.modelio import load_model

    lines = []
    with gzip.open(shared_data / "corpus" / "sotu.txt.gz", "rt") as fh:
        for line in fh:
            lines.append(line)
            if len(lines) == 64:
                break
    (tmp_path / "c.txt").write_text("".join(lines))
    out = tmp_path / "student"
    report = distill("default", tmp_path / "c.txt", out, student_layers=2, steps=3, batch_size=4, seq_len=64,
                     head_steps=3, head_batch_size=4, logging_steps=1, cache_dir=tmp_path / "cache", quiet=True, **TRIPLE_LOSS)
    loaded = load_model(out)
    assert loaded.config.num_hidden_layers == 2 and loaded.config.hidden_size == 384 and loaded.pooling == "mean"
    assert report.manifest["recipe"]["student"]["layer_map"] == [0, 5]
    assert report.manifest["distill"]["teacher_head"]["source"] == "fitted"
    assert 0.0 <= report.metrics["teacher_mlm_accuracy"] <= 1.0


@pytest.mark.parametrize("own_head", [False, True])
def test_hidden_state_losses_only_fit_no_head(teacher3: Path, corpus: Path, tmp_path: Path, own_head: bool) -> None:
    """alpha_mlm = alpha_ce = 0: no teacher head is fitted; the student keeps a head only if the teacher has its own."""
    import shutil

    from transformers import BertForMaskedLM

    source = teacher3
    if own_head:
        source = tmp_path / "mlm-teacher"
        BertForMaskedLM.from_pretrained(teacher3).save_pretrained(source, safe_serialization=True)
        for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if (teacher3 / f).exists():  # transformers 5 writes no special_tokens_map.json
                shutil.copy(teacher3 / f, source)
    out = tmp_path / "student"
    report = distill(source, corpus, out, student_layers=2, alpha_mlm=0.0, alpha_ce=0.0, alpha_cos=1.0, mlm_probability=0.0,
                     cache_dir=tmp_path / "cache", **FAST)  # fmt: skip
    assert report.manifest["distill"]["teacher_head"]["source"] == "unused"
    assert not (tmp_path / "cache").exists()  # nothing fitted, nothing cached
    saved = _weights(out)
    assert any(k.startswith("cls.") for k in saved) == own_head
    assert report.manifest["model"]["architecture"] == ("BertForMaskedLM" if own_head else "BertModel")


# ----------------------------------------------------------------------------------------- hostile input


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("how", ["force", "resume", "dotdot", "student_init", "corpus_inside"])
def test_the_teacher_and_other_inputs_are_never_at_risk(teacher3: Path, corpus: Path, tmp_path: Path, how: str) -> None:
    import shutil

    teacher = Path(shutil.copytree(teacher3, tmp_path / "T"))
    init = Path(shutil.copytree(teacher3, tmp_path / "I"))
    before = _tree(tmp_path)
    kw = dict(FAST, cache_dir=tmp_path / "cache")
    if how == "force":
        call = lambda: distill(teacher, corpus, teacher, force=True, student_layers=2, **kw)  # noqa: E731
    elif how == "resume":
        call = lambda: distill(teacher, corpus, teacher, resume=True, student_layers=2, **kw)  # noqa: E731
    elif how == "dotdot":
        call = lambda: distill(teacher, corpus, tmp_path / "T" / ".." / "T", force=True, student_layers=2, **kw)  # noqa: E731
    elif how == "student_init":
        call = lambda: distill(teacher, corpus, init, student_init=init, force=True, **kw)  # noqa: E731
    else:
        (tmp_path / "c.txt").write_bytes(corpus.read_bytes())
        before = _tree(tmp_path)
        call = lambda: distill(teacher, tmp_path / "c.txt", tmp_path, force=True, student_layers=2, **kw)  # noqa: E731
    with pytest.raises(UserError, match="an output must not overlap an input") as info:
        call()
    assert "\n" not in str(info.value)
    assert _tree(tmp_path) == before


def test_precision_without_a_gpu_writes_nothing(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    out = tmp_path / "out"
    with pytest.raises(UserError, match="needs a GPU"):
        distill(teacher3, corpus, out, student_layers=2, precision="fp16", cache_dir=tmp_path / "cache", **FAST)
    assert not out.exists()


def test_unwritable_out_is_one_user_error(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not writable"):
        distill(teacher3, corpus, "/proc/x", student_layers=2, cache_dir=tmp_path / "cache", **FAST)


def test_resume_skips_a_checkpoint_cut_short_by_a_kill(teacher3: Path, corpus: Path, tmp_path: Path) -> None:
    from transformers import TrainerCallback

    class CrashAfterSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
            if state.global_step == 4:
                raise _Crash("simulated kill after the step-4 checkpoint")

    kw = dict(FAST, steps=6, cache_dir=tmp_path / "cache", student_layers=2)
    full = distill(teacher3, corpus, tmp_path / "full", **kw)
    part = tmp_path / "part"
    with pytest.raises(_Crash):
        distill(teacher3, corpus, part, callbacks=[CrashAfterSave()], **kw)
    (part / "checkpoints" / "checkpoint-4" / "trainer_state.json").unlink()  # killed while writing it
    report = distill(teacher3, corpus, part, resume=True, **kw)
    assert report.manifest["distill"]["resumed_from"].endswith("checkpoint-2")
    a, b = _weights(full.out_dir), _weights(part)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_without_a_complete_checkpoint_starts_over(teacher3: Path, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import TrainerCallback

    class CrashAfterSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
            raise _Crash("simulated kill after the first checkpoint")

    kw = dict(FAST, cache_dir=tmp_path / "cache", student_layers=2)
    part = tmp_path / "part"
    with pytest.raises(_Crash):
        distill(teacher3, corpus, part, callbacks=[CrashAfterSave()], **kw)
    (part / "checkpoints" / "checkpoint-2" / "optimizer.pt").write_bytes(b"PK\x03\x04truncated")
    report = distill(teacher3, corpus, part, resume=True, **dict(kw, quiet=False))
    assert report.manifest["distill"]["resumed_from"] is None and report.manifest["distill"]["steps"] == 4
    err = capsys.readouterr().err
    assert "optimizer.pt" in err and "no complete checkpoint" in err


def test_ctrl_c_says_the_checkpoints_are_kept(teacher3: Path, corpus: Path, tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    from transformers import TrainerCallback

    class CtrlC(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
            raise KeyboardInterrupt

    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt, match="checkpoints kept in .*checkpoints: rerun with --resume") as info:
        distill(teacher3, corpus, out, callbacks=[CtrlC()], student_layers=2, cache_dir=tmp_path / "cache", **FAST)
    assert (out / "checkpoints" / "checkpoint-2").is_dir()

    import edgebert.distill

    def interrupted(**kwargs):  # noqa: ANN003, ANN202
        raise info.value

    edgebert.distill.distill, original = interrupted, edgebert.distill.distill
    try:
        code, _, err = run_cli("distill", "--corpus", str(corpus), "--out", str(out))
    finally:
        edgebert.distill.distill = original
    assert code == 130 and "checkpoints kept in" in err and "nothing was left half-written" not in err
