"""The pipeline's [redistill] stage (a second sentence embedder distilled into the final student across tokenizers)
and a finetune stage that chooses on the run's --eval-sts pairs and refits on every pair; the mpnet-small preset."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conftest import WORDS, tiny_recipe_head

from edgebert.errors import UserError
from edgebert.pipeline import format_plan, load_preset, parse_recipe, plan_pipeline, run_pipeline


@pytest.fixture(scope="module")
def second_teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny MPNet sentence embedder (its own WordPiece vocabulary, a Dense to 48)."""
    from model_zoo import add_st_stack, build_mpnet

    return add_st_stack(build_mpnet(tmp_path_factory.mktemp("second") / "mpnet", seed=2), dense_out=48)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("redistill-data")
    rng = random.Random(0)
    sentence = lambda: " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10)))  # noqa: E731
    (d / "corpus.txt").write_text("\n".join(sentence() for _ in range(80)) + "\n")
    (d / "sts.csv").write_text("".join(f"{sentence()},{sentence()},{rng.uniform(0, 5):.1f}\n" for _ in range(30)))
    return {"corpus": d / "corpus.txt", "sts": d / "sts.csv"}


def recipe_text(teacher: Path, data: dict[str, Path], redistill: str = "") -> str:
    return tiny_recipe_head(teacher, data["corpus"]) + f"""eval_sts = "{data['sts']}"
eval_sts_limit = 10
eval_steps = 2
{redistill}
[finetune]
data = "{data['sts']}"
header = "sentence1,sentence2,score"
epochs = 2
lr = 1e-3
held_out_eval_sts = true
refit = true
[export]
targets = {{ onnx = ["none"] }}
teacher_targets = []
[bench]
sts = "{data['sts']}"
seq_len = [16]
warmup = 1
repeats = 2
in_process = true
"""


def test_a_second_teacher_is_distilled_in_then_the_supervised_stage_chooses_on_the_eval_pairs_and_refits(
    tiny_bert: Path, second_teacher: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    text = recipe_text(tiny_bert, data, "[redistill]\ntexts_per_source = 25\nsteps = 2\nbatch_size = 4\nseq_len = 16\nalpha_sim = 1.0\neval_steps = 2\n")
    recipe, work = parse_recipe(text), tmp_path / "work"
    plan = "\n".join(format_plan(plan_pipeline(recipe, tmp_path / "out", work=str(work), redistill_teacher=str(second_teacher))))
    assert "redistill → " in plan and f"distil {second_teacher}'s sentence embeddings into the student across tokenizers" in plan
    assert "best on the --eval-sts pairs; then refitted on every row" in plan
    report = run_pipeline(recipe, tmp_path / "out", work=work, redistill_teacher=str(second_teacher), cache_dir=tmp_path / "cache", quiet=True)
    summary = json.loads((report.out_dir / "pipeline.json").read_text())
    stages = [s["stage"] for s in summary["stages"]]
    assert stages[:3] == ["distill", "redistill", "finetune"] and summary["student"] == str(work / "finetune" / "student")
    second = json.loads((work / "redistill" / "student" / "edgebert.json").read_text())
    assert second["distill"]["init"]["from"] == str(work / "distill" / "student")
    assert second["parent"] == str(second_teacher) and second["distill"]["objective"] == "sentence embeddings across tokenizers"
    sampled = sorted((work / "corpus" / "redistill").iterdir())
    assert [p.name for p in sampled] == ["0-corpus.txt"] and len(sampled[0].read_text().splitlines()) == 25
    assert json.loads((work / "redistill" / "student" / "edgebert.json").read_text())["distill"]["corpus"]["sources"] == [str(sampled[0])]
    tuned = json.loads((work / "finetune" / "student" / "edgebert.json").read_text())["finetune"]
    assert tuned["held_out"]["path"] == str(work / "corpus" / "eval-sts.csv") and tuned["held_out"]["rows"] == 10
    assert tuned["data"]["training_rows"] == 20 and (tuned["refit"] is None) == (tuned["kept"]["epochs"][1] == 0)
    if tuned["refit"]:
        assert tuned["refit"]["rows"] == 30
    labels = [item["label"] for item in json.loads((report.out_dir / "report.json").read_text())["items"]]
    assert labels[:2] == ["teacher", "second-teacher"] and "student-onnx" in labels


def test_a_recipe_without_the_stage_keeps_its_fingerprint_and_bad_keys_are_one_line(tiny_bert: Path, data: dict[str, Path]) -> None:
    base = parse_recipe(recipe_text(tiny_bert, data))
    assert parse_recipe(recipe_text(tiny_bert, data, "[redistill]\n")).fingerprint() == base.fingerprint()
    assert parse_recipe(recipe_text(tiny_bert, data, '[redistill]\nteacher = "x"\n')).fingerprint() != base.fingerprint()
    for section, needle in [("[redistill]\nalpha_pooled = 0.0\nalpha_sim = 0.0\n", "leaves nothing to learn"),
                            ("[redistill]\nsteps = 0\n", "recipe: redistill.steps"),
                            ("[redistill]\nalpha_cos = 1.0\n", "unknown key 'redistill.alpha_cos'")]:  # fmt: skip
        with pytest.raises(UserError, match=needle):
            parse_recipe(recipe_text(tiny_bert, data, section))
    with pytest.raises(UserError, match="set it or held_out / held_out_file, not both"):
        parse_recipe(recipe_text(tiny_bert, data).replace("refit = true", "refit = true\nheld_out = 0.2"))


def test_the_mpnet_small_preset_is_the_small_students_distillation_then_the_mpnet_stages() -> None:
    small, mpnet = load_preset("small"), load_preset("mpnet-small")
    assert mpnet.distill == small.distill  # the same first student (extends = "small")
    assert mpnet.redistill.enabled and mpnet.redistill.teacher.endswith("all-mpnet-base-v2")
    assert mpnet.vocab.trim and mpnet.vocab.max_size and not mpnet.compress.prune_heads and not mpnet.compress.heal_steps
    assert mpnet.finetune.refit and mpnet.finetune.held_out_eval_sts and mpnet.finetune.loss == "cosent"
    assert mpnet.targets.max_mb == 8.0 and mpnet.targets.min_onnx_speedup is None  # its own [targets] replace small's
