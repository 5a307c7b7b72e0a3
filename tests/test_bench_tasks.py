"""`edgebert bench` by task: classifier accuracy and agreement, fill-mask top-1 agreement, task mismatches."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from edgebert.bench.harness import build_config, plan_bench, run_bench
from edgebert.bench.measure import MeasureJob, sentence_batches
from edgebert.bench.report import derive
from edgebert.bench.tasks import agreement, mask_middle, measure_classification, measure_fill_mask
from edgebert.config import BenchConfig
from edgebert.errors import UserError

ID2LABEL = {0: "NEGATIVE", 1: "POSITIVE"}


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A classifier teacher and a second one with the same labels (a stand-in student)."""
    from model_zoo import build_bert

    root = tmp_path_factory.mktemp("cls")
    teacher = build_bert(root / "teacher", head="sequence-classification", num_labels=2, id2label=ID2LABEL, seed=3)
    student = build_bert(root / "student", head="sequence-classification", num_labels=2, id2label=ID2LABEL, seed=4)
    return teacher, student


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import write_labelled_tsv

    return write_labelled_tsv(tmp_path_factory.mktemp("sst2") / "dev.tsv", 30, seed=2)


def quick_job(**kw: object) -> MeasureJob:
    return MeasureJob(seq_lens=[16], batches=[1], threads=[1], warmup=1, repeats=2, sts_max_length=32, **kw)  # type: ignore[arg-type]


def _torch_predictions(model_dir: Path, texts: list[str]) -> list[int]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    with torch.inference_mode():
        enc = tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
        return model(**enc).logits.argmax(-1).tolist()


def test_classifiers_report_accuracy_agreement_and_retention(classifiers: tuple[Path, Path], labelled: Path, tmp_path: Path) -> None:
    from edgebert.data import load_labelled

    teacher, student = classifiers
    config = build_config([f"teacher={teacher}", f"student={student}"], job=quick_job(sst2_path=str(labelled)), isolate=False)
    assert [s.task for s in config.items] == ["text-classification"] * 2
    report = run_bench(config, tmp_path / "r", echo=lambda m: None).report
    items = {i["label"]: i for i in report["items"]}
    data = load_labelled(labelled)
    gold = [int(y) for y in data.labels]
    for label, path in (("teacher", teacher), ("student", student)):
        expected = _torch_predictions(path, data.texts)
        assert items[label]["classification"]["predicted"] == expected
        assert items[label]["classification"]["accuracy"] == pytest.approx(np.mean(np.array(expected) == gold))
        assert items[label]["labels"] == ["NEGATIVE", "POSITIVE"] and items[label]["task"] == "text-classification"
    t, s = items["teacher"]["derived"], items["student"]["derived"]
    assert t["agreement"] == 1.0 and t["retention"] == pytest.approx(1.0)
    same = np.mean(np.array(items["student"]["classification"]["predicted"]) == items["teacher"]["classification"]["predicted"])
    assert s["agreement"] == pytest.approx(same)
    assert s["retention"] == pytest.approx(s["accuracy"] / t["accuracy"])
    md = (tmp_path / "r" / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| student"))
    assert "| cls |" in row and f"{s['accuracy']:.4f}" in row
    assert f"- Labelled sentences (classifiers): {labelled}: 30 scored" in md and report["labelled"]["examples"] == 30


def test_an_embeddings_only_export_of_a_classifier_is_a_failed_item(classifiers: tuple[Path, Path], labelled: Path, tmp_path: Path) -> None:
    from edgebert.export import export

    teacher, _ = classifiers
    onnx = tmp_path / "onnx-fe"
    export("onnx", model=teacher, out=onnx, task="feature-extraction", seq_len=32, quiet=True)
    config = build_config([f"teacher={teacher}", f"fe={onnx}"], job=quick_job(sst2_path=str(labelled)), isolate=False)
    report = run_bench(config, tmp_path / "r", echo=lambda m: None).report
    fe = next(i for i in report["items"] if i["label"] == "fe")
    assert fe["status"] == "failed" and "task mismatch" in fe["error"] and "head is missing" in fe["error"]
    assert fe["derived"]["retention"] is None and fe["derived"]["agreement"] is None
    assert next(i for i in report["items"] if i["label"] == "teacher")["status"] == "ok"


def test_a_classifier_export_is_benched_through_the_runner_contract(classifiers: tuple[Path, Path], labelled: Path, tmp_path: Path) -> None:
    """A classifier's ONNX export, benched beside its PyTorch dir: the same predictions, full retention."""
    from edgebert.export import export

    teacher, _ = classifiers
    onnx = tmp_path / "onnx-cls"
    export("onnx", model=teacher, out=onnx, seq_len=32, quiet=True)
    assert json.loads((onnx / "edgebert.json").read_text())["task"] == "text-classification"
    config = build_config([f"teacher={teacher}", f"onnx={onnx}"], job=quick_job(sst2_path=str(labelled)), isolate=False)
    report = run_bench(config, tmp_path / "r", echo=lambda m: None).report
    item = next(i for i in report["items"] if i["label"] == "onnx")
    assert item["status"] == "ok" and item["derived"]["agreement"] == 1.0 and item["derived"]["retention"] == pytest.approx(1.0)


class _FakeRunner:
    """A bare runner with the Runner contract's outputs: logits of a fixed linear map of the input ids."""

    def __init__(self, outputs: str = "logits", labels: int = 2, vocab: int = 50) -> None:
        self.outputs, self.labels, self.vocab = outputs, labels, vocab
        self.calls: list[dict[str, np.ndarray]] = []

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls.append({k: v.copy() for k, v in inputs.items()})
        ids = inputs["input_ids"]
        if self.outputs == "logits":  # classifier: class = first token after [CLS] is even
            return {"logits": np.stack([(ids[:, 1] % 2 == 0), (ids[:, 1] % 2 == 1)], axis=1).astype(np.float32)}
        if self.outputs == "top_ids":  # fill-mask: top-1 id = the id at the previous position, per position
            return {"top_ids": np.stack([np.roll(ids, 1, axis=1), ids], axis=-1), "top_scores": np.ones((*ids.shape, 2))}
        return {"sentence_embedding": np.ones((ids.shape[0], 4), dtype=np.float32)}

    def close(self) -> None:
        pass


def _fake_item(tokenizer_dir: Path, id2label: dict[int, str] | None = None) -> SimpleNamespace:
    from transformers import AutoTokenizer

    return SimpleNamespace(
        tokenizer=AutoTokenizer.from_pretrained(tokenizer_dir), static_seq_len=None, id2label=id2label,
        spec=SimpleNamespace(label="fake"), target="onnx", pad_length=lambda tokens: None,  # dynamic: no bucket
    )  # fmt: skip


def test_classification_from_a_runners_logits(classifiers: tuple[Path, Path], labelled: Path) -> None:
    from edgebert.data import load_labelled

    item = _fake_item(classifiers[0], {0: "POSITIVE", 1: "NEGATIVE"})  # reversed: SST-2's 1 is column 0
    result = measure_classification(item, _FakeRunner(), quick_job(sst2_path=str(labelled)), sentence_batches)
    data = load_labelled(labelled)
    first = [item.tokenizer(t)["input_ids"][1] for t in data.texts]
    predicted = [int(i % 2 == 1) for i in first]
    assert result["predicted"] == predicted
    gold = [1 - int(y) for y in data.labels]  # label 1 (positive) is column 0 of this head
    assert result["accuracy"] == pytest.approx(np.mean(np.array(predicted) == gold))
    with pytest.raises(ValueError, match="no logits output"):
        measure_classification(item, _FakeRunner("embedding"), quick_job(sst2_path=str(labelled)), sentence_batches)


def test_fill_mask_masks_the_middle_token_and_reads_top_ids(classifiers: tuple[Path, Path], labelled: Path) -> None:
    item = _fake_item(classifiers[0])
    runner = _FakeRunner("top_ids")
    result = measure_fill_mask(item, runner, quick_job(sst2_path=str(labelled)), sentence_batches)
    mask_id = item.tokenizer.mask_token_id
    for call in runner.calls:
        real = call["attention_mask"].sum(1)
        for row, n in enumerate(real):
            assert call["input_ids"][row, 1 + (n - 2) // 2] == mask_id  # the middle token, never [CLS]/[SEP]
    assert result["examples"] == 30 and all(p >= 0 for p in result["predicted"])
    ids = {"input_ids": np.array([[101, 5, 6, 102, 0], [101, 102, 0, 0, 0]]), "attention_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]])}
    assert mask_middle(ids, 103).tolist() == [2, -1] and ids["input_ids"][0].tolist() == [101, 5, 103, 102, 0]


def test_agreement_and_task_retention_arithmetic() -> None:
    assert agreement([1, 0, 1, -1], [1, 1, 1, 0]) == pytest.approx(2 / 3)
    assert agreement([1, 0], [1]) is None and agreement(None, [1]) is None
    items = [
        {"label": "ref", "status": "ok", "classification": {"accuracy": 0.9, "predicted": [1, 0, 1, 1]}},
        {"label": "s", "status": "ok", "classification": {"accuracy": 0.72, "predicted": [1, 1, 1, 1]}},
        {"label": "m", "status": "ok", "fill_mask": {"predicted": [4, 5, -1]}},
        {"label": "bad", "status": "failed", "error": "task mismatch"},
    ]
    derive(items, "ref", (128, 1, 1))
    d = {i["label"]: i["derived"] for i in items}
    assert d["s"]["retention"] == pytest.approx(0.8) and d["s"]["agreement"] == 0.75 and d["s"]["accuracy"] == 0.72
    assert d["ref"]["retention"] == pytest.approx(1.0) and d["ref"]["agreement"] == 1.0
    assert d["m"]["retention"] is None  # the reference has no fill-mask predictions to agree with
    assert d["bad"]["retention"] is None and d["bad"]["accuracy"] is None


def test_a_labelled_dataset_that_cannot_load_is_one_line(classifiers: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="could not load dataset 'glue/sst2:validation'.*pass a local TSV"):
        plan_bench([str(classifiers[0])], BenchConfig(sst2="glue/sst2:validation"))


def test_glue_sst2_validation_is_loaded_with_datasets(classifiers: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    import edgebert.data
    from edgebert.data import load_labelled

    table = datasets.Dataset.from_dict({"sentence": ["good film", "bad film", "unlabelled"], "label": [1, 0, -1], "idx": [0, 1, 2]})
    loaded = []
    monkeypatch.setattr(edgebert.data, "load_hf_dataset", lambda name, config, split, spec, hint: loaded.append((name, config, split)) or table)
    data = load_labelled("glue/sst2:validation")
    assert loaded == [("nyu-mll/glue", "sst2", "validation")] and data.texts == ["good film", "bad film"] and data.labels == ["1", "0"]


def _spec(label: str, kind: str, task: str) -> object:
    from edgebert.bench.items import ItemSpec

    return ItemSpec(label=label, path=f"/x/{label}", kind=kind, target="pytorch" if kind == "pytorch" else "onnx", task=task)


def test_assign_tasks_against_the_reference() -> None:
    from edgebert.bench.items import assign_tasks as assign

    def assign_tasks(specs: list, reference: str) -> None:  # one reference for the whole run
        assign(specs, {s.label: reference for s in specs})

    mlm, enc = _spec("mlm", "pytorch", "fill-mask"), _spec("enc", "export", "feature-extraction")
    assign_tasks([enc, mlm], "enc")
    assert mlm.task == "feature-extraction" and mlm.unsupported is None  # a masked-LM dir is an encoder by default
    mlm, masked = _spec("mlm", "pytorch", "fill-mask"), _spec("masked", "export", "fill-mask")
    assign_tasks([mlm, masked], "mlm")
    assert mlm.task == "fill-mask" and masked.unsupported is None  # ...unless an export in the run is fill-mask
    ref, cls_dir, cls_export = _spec("ref", "pytorch", "feature-extraction"), _spec("c", "pytorch", "text-classification"), _spec("e", "export", "text-classification")
    assign_tasks([ref, cls_dir, cls_export], "ref")
    assert cls_dir.task == "feature-extraction" and cls_dir.unsupported is None  # benched as the encoder under its head
    assert "without sentence embeddings" in (cls_export.unsupported or "")
    teacher, fe = _spec("t", "pytorch", "text-classification"), _spec("fe", "export", "feature-extraction")
    assign_tasks([teacher, fe], "t")
    assert fe.unsupported and fe.unsupported.startswith("task mismatch: fe computes feature-extraction")


@pytest.mark.parametrize("head", ["fill-mask", "token-classification"])
def test_pytorch_head_items_predict_what_their_model_predicts(head: str, labelled: Path, tmp_path: Path) -> None:
    import torch
    import transformers
    from model_zoo import HEADS_BY_TASK, build_bert

    from edgebert.bench.items import ItemSpec, open_item
    from edgebert.bench.tasks import MEASURES, STAGES, mask_middle
    from edgebert.parity import encode

    model_dir = build_bert(tmp_path / "m", head=head, num_labels=3, seed=7)
    item = open_item(ItemSpec(label="m", path=str(model_dir), kind="pytorch", target="pytorch", task=head))
    job = quick_job(sst2_path=str(labelled))
    runner = item.make_runner(1)
    result = MEASURES[STAGES[head]](item, runner, job, sentence_batches)
    model = getattr(transformers, HEADS_BY_TASK[head]).from_pretrained(model_dir).eval()
    from edgebert.data import load_labelled

    texts = load_labelled(labelled).texts
    expected: list[int] = []
    for text in texts:
        inputs = encode(item.tokenizer, [text], 32, pad_to_seq_len=False)
        positions = mask_middle(inputs, item.tokenizer.mask_token_id) if head == "fill-mask" else None
        with torch.inference_mode():
            logits = model(**{k: torch.from_numpy(v) for k, v in inputs.items()}).logits[0]
        expected += [int(logits[int(positions[0])].argmax())] if head == "fill-mask" else logits.argmax(-1).tolist()
    assert result["predicted"] == expected and item.task == head


def test_labels_the_classifier_cannot_read_are_one_line_before_measuring(classifiers: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\nthe dog\tneutral\n")
    with pytest.raises(UserError, match=r"--sst2 .*bad.tsv for teacher: label 'neutral' is neither a label of the model"):
        build_config([f"teacher={classifiers[0]}"], job=quick_job(sst2_path=str(bad)))
    names = tmp_path / "names.tsv"
    names.write_text("text\tlabel\nthe dog\tPOSITIVE\nthe cat\tnegative\n")
    assert build_config([f"teacher={classifiers[0]}"], job=quick_job(sst2_path=str(names))).items[0].task == "text-classification"


def test_the_report_says_how_many_labelled_sentences_were_truncated(classifiers: tuple[Path, Path], labelled: Path, tmp_path: Path) -> None:
    from edgebert.data import load_labelled
    from transformers import AutoTokenizer

    teacher, _ = classifiers
    job = MeasureJob(seq_lens=[8], batches=[1], threads=[1], warmup=1, repeats=2, sts_max_length=8, sst2_path=str(labelled))
    report = run_bench(build_config([f"teacher={teacher}"], job=job, isolate=False), tmp_path / "r", echo=lambda m: None).report
    tokenizer = AutoTokenizer.from_pretrained(teacher)
    longer = sum(len(ids) > 8 for ids in tokenizer(load_labelled(labelled).texts)["input_ids"])
    assert 0 < longer == report["items"][0]["classification"]["truncated"] == report["labelled"]["truncated"]
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"30 scored (first {job.sst2_limit} rows), {longer} longer than 8 tokens and truncated." in md


def test_a_classifier_benched_on_sts_only_says_accuracy_was_not_measured(classifiers: tuple[Path, Path], tmp_path: Path) -> None:
    teacher, _ = classifiers
    sts = tmp_path / "sts.csv"
    sts.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\n")
    report = run_bench(build_config([f"teacher={teacher}"], job=quick_job(sts_path=str(sts)), isolate=False), tmp_path / "r", echo=lambda m: None).report
    assert any("accuracy not measured" in n for n in report["items"][0]["notes"])
    md = (tmp_path / "r" / "report.md").read_text()
    assert "None pairs" not in md and "not used: no item computes sentence embeddings" in md and "accuracy not measured" in md
