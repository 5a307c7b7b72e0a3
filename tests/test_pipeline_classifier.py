"""edgebert pipeline with a sequence-classifier teacher: task distillation, labelled bench data, accuracy targets."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from edgebert.errors import UserError
from edgebert.pipeline import parse_recipe, run_pipeline
from edgebert.pipeline.recipe import load_recipe
from edgebert.pipeline.run import format_plan, plan_pipeline

ROOT = Path(__file__).resolve().parents[1]
ID2LABEL = {0: "negative", 1: "positive"}


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from model_zoo import build_bert

    return build_bert(tmp_path_factory.mktemp("sst2") / "teacher", head="sequence-classification", num_labels=2, id2label=ID2LABEL, seed=5)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """SST-2 style train (the corpus), a held-back part of it (bench) and a labelled train slice (checkpoints)."""
    from conftest import WORDS

    d = tmp_path_factory.mktemp("sst2-data")
    rng = random.Random(3)
    rows = [(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10))), rng.randint(0, 1)) for _ in range(60)]
    for name, part in (("train", rows), ("heldout", rows[:12]), ("pick", rows[40:52])):
        (d / f"{name}.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in part))
    return {"train": d / "train.tsv", "heldout": d / "heldout.tsv", "pick": d / "pick.tsv"}


def recipe_text(teacher: Path, data: dict[str, Path], exports: bool = False) -> str:
    targets = '{ onnx = ["int8"] }' if exports else "{}"
    return f"""
name = "cls"
teacher = "{teacher}"
corpus = ["{data['train']}"]

[distill]
student_layers = 1
steps = 4
batch_size = 4
seq_len = 24
eval_labels = "{data['pick']}"
eval_steps = 2
save_steps = 2
logging_steps = 1

[export]
targets = {targets}
teacher_targets = []

[bench]
sst2 = "{data['heldout']}"
seq_len = [16]
warmup = 1
repeats = 2
in_process = true

[targets]
min_accuracy_retention = 0.0
"""


def test_dry_run_plans_task_distillation(teacher: Path, data: dict[str, Path], tmp_path: Path) -> None:
    plan = plan_pipeline(parse_recipe(recipe_text(teacher, data)), tmp_path / "out")
    assert plan.task == "text-classification" and plan.classifier and plan.skipped == []
    text = "\n".join(format_plan(plan))
    assert "task distillation of the classifier teacher" in text and "best accuracy on --eval-labels" in text
    assert f"accuracy and agreement on {data['heldout']}" in text and "min_accuracy_retention 0" in text
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.work").exists()
    bare = parse_recipe(recipe_text(teacher, data).replace(f'eval_labels = "{data["pick"]}"', "").replace(f'sst2 = "{data["heldout"]}"', ""))
    messages = [s["message"] for s in plan_pipeline(bare, tmp_path / "out").skipped]
    assert any("no --eval-labels" in m for m in messages) and any("accuracy targets are not evaluated" in m for m in messages)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("[targets]", "[targets]\nmin_sts_retention = 0.9"), "set targets.min_accuracy_retention"),
        (("eval_steps = 2", 'eval_steps = 2\neval_sts = "SPLIT"'), "not --eval-sts"),
    ],
)
def test_classifier_plans_refuse_embedding_data(teacher: Path, data: dict[str, Path], tmp_path: Path, change: tuple[str, str], message: str) -> None:
    sts = tmp_path / "sts.csv"
    sts.write_text("a b,c d,1\ne f,g h,2\n")
    text = recipe_text(teacher, data).replace(change[0], change[1].replace("SPLIT", str(sts)), 1)
    with pytest.raises(UserError, match=message):
        plan_pipeline(parse_recipe(text), tmp_path / "out")


def test_shipped_sst2_recipe_parses() -> None:
    recipe = load_recipe(ROOT / "benchmarks" / "suites" / "sst2_classifier.toml")
    assert recipe.targets.min_accuracy_retention and recipe.bench.sst2 and recipe.distill.student_layers == 3
    assert recipe.distill.alpha_ce is None  # auto: task distillation for a classifier teacher


def test_tiny_classifier_pipeline_exports_the_student_with_its_head(teacher: Path, data: dict[str, Path], tmp_path: Path) -> None:
    """Task distillation → the student's ONNX int8 export, logits and labels → benched by accuracy beside the teacher."""
    report = run_pipeline(parse_recipe(recipe_text(teacher, data, exports=True)), tmp_path / "out", quiet=True)
    export = json.loads((report.work_dir / "export" / "student-onnx-int8" / "edgebert.json").read_text())
    assert export["task"] == "text-classification" and export["outputs"][0]["name"] == "logits"
    assert export["outputs"][0]["labels"] and export["parity"]["passed"]
    items = {i["label"]: i for i in json.loads((report.out_dir / "report.json").read_text())["items"]}
    onnx = next(i for label, i in items.items() if "onnx" in label)
    assert onnx["status"] == "ok" and onnx["classification"]["examples"] == 12 and onnx["derived"]["agreement"] is not None


def test_tiny_classifier_pipeline_end_to_end_in_pytorch(teacher: Path, data: dict[str, Path], tmp_path: Path) -> None:
    """No exports: the PyTorch student is judged."""
    report = run_pipeline(parse_recipe(recipe_text(teacher, data)), tmp_path / "out", quiet=True)
    work = report.work_dir
    student = json.loads((work / "distill" / "student" / "edgebert.json").read_text())
    assert student["task"] == "text-classification" and student["recipe"]["loss_choice"].startswith("auto: task distillation")
    assert student["metrics"]["eval_labels"]["examples"] == 12
    corpus = next((work / "corpus").glob("*-train.txt")).read_text().splitlines()
    heldout = [line.split("\t")[0] for line in data["heldout"].read_text().splitlines()[1:]]
    assert corpus and not set(heldout) & set(corpus)  # the bench's sentences are never distilled on
    bench = json.loads((report.out_dir / "report.json").read_text())
    items = {i["label"]: i for i in bench["items"]}
    assert items["teacher"]["classification"]["examples"] == 12 and items["student"]["status"] == "ok"
    assert items["student"]["derived"]["agreement"] is not None
    verdict = report.summary["targets"]["min_accuracy_retention"]  # no exports: the PyTorch student is judged
    assert verdict["met"] is True and verdict["exports"]["student"]["value"] == round(items["student"]["derived"]["retention"], 4)
    headline = report.summary["headline"]
    assert [r["label"] for r in headline] == ["student"] and headline[0]["accuracy"] == items["student"]["classification"]["accuracy"]
    assert "| cls |" in (report.out_dir / "report.md").read_text()


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (b"text\tlabel\nthe dog\tneutral\n", r"label 'neutral' is neither a label of the model"),
        (b"text\tlabel\n" + b"the dog plays\t1\n" * 150_000 + b"\xff\xfe\t0\n", "is not UTF-8 text"),
    ],
    ids=["a-label-the-teacher-lacks", "binary-after-2-MB"],
)
def test_dry_run_refuses_labels_the_stages_would_refuse(
    teacher: Path, data: dict[str, Path], tmp_path: Path, labels: bytes, message: str
) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(labels)
    text = recipe_text(teacher, data).replace(str(data["pick"]), str(bad))
    with pytest.raises(UserError, match=message):
        plan_pipeline(parse_recipe(text), tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.work").exists()


def test_dry_run_refuses_a_teacher_whose_weights_lack_what_its_config_names(data: dict[str, Path], tmp_path: Path) -> None:
    """A 2-group ALBERT config over 1-group weights: found by the plan, not by the distill stage."""
    import json

    from model_zoo import build_albert

    albert = build_albert(tmp_path / "albert")
    config = json.loads((albert / "config.json").read_text())
    (albert / "config.json").write_text(json.dumps({**config, "num_hidden_groups": 2}))
    text = recipe_text(albert, data).replace(f'eval_labels = "{data["pick"]}"', "").replace(f'sst2 = "{data["heldout"]}"', "")
    text = text.replace("[targets]\nmin_accuracy_retention = 0.0", "[targets]")
    with pytest.raises(UserError, match="is missing 16 tensors"):
        plan_pipeline(parse_recipe(text), tmp_path / "out")


def test_a_recipe_with_buckets_and_a_seq_len_list_is_refused_when_parsed(teacher: Path, data: dict[str, Path]) -> None:
    text = recipe_text(teacher, data).replace("teacher_targets = []", "teacher_targets = []\nbuckets = true\nseq_len = [16, 32]")
    with pytest.raises(UserError, match="export.buckets adds the default lengths below seq_len"):
        parse_recipe(text)


@pytest.mark.parametrize("heal_from", ["none", "teacher"])
def test_a_classifier_through_the_whole_chain(teacher: Path, data: dict[str, Path], tmp_path: Path, heal_from: str) -> None:
    """Task distillation → pruning (healed from the teacher, or not) → every target with buckets → benched on the
    held-back labelled rows: every export is a classifier with the teacher's labels and is scored by accuracy."""
    heal = 'heal_steps = 4\nheal_from = "teacher"\n' if heal_from == "teacher" else "heal_steps = 0\n"
    text = recipe_text(teacher, data).replace(
        "[export]\ntargets = {}",
        f"[compress]\nprune_heads = 0.25\nprune_ffn = 0.25\ncalibration_samples = 8\nseq_len = 24\n{heal}\n"
        '[export]\ntargets = { onnx = ["int8"], tflite = ["int8"], tfjs = ["uint8"] }\nseq_len = 32\nbuckets = true',
    )
    report = run_pipeline(parse_recipe(text), tmp_path / "out", quiet=True)
    pruned = json.loads((report.work_dir / "compress" / "student" / "edgebert.json").read_text())
    assert pruned["task"] == "text-classification" and pruned["model"]["architecture"] == "BertForSequenceClassification"
    items = {i["label"]: i for i in json.loads((report.out_dir / "report.json").read_text())["items"]}
    exports = {label: i for label, i in items.items() if i.get("target") in ("onnx", "tflite", "tfjs")}
    assert {i["target"] for i in exports.values()} == {"onnx", "tflite", "tfjs"}, sorted(items)
    for label, item in exports.items():
        assert item["status"] == "ok" and item["task"] == "text-classification", (label, item.get("error"))
        assert item["labels"] == list(ID2LABEL.values()) and item["classification"]["examples"] == 12
        assert item["derived"]["agreement"] is not None
        assert item["target"] == "onnx" or len(item["buckets"]) > 1  # static targets: one graph per bucket
