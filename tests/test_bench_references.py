"""`edgebert bench --reference`: one reference for the run, or each export against its parent model (`parent`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from edgebert.bench.harness import build_config, run_bench
from edgebert.bench.items import ItemSpec, assign_tasks
from edgebert.bench.measure import MeasureJob
from edgebert.bench.references import PARENT, resolve_references
from edgebert.bench.report import derive

ID2LABEL = {0: "NEGATIVE", 1: "POSITIVE"}


@pytest.fixture(scope="module")
def family_exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A BERT embedder and a DistilBERT classifier, each with its ONNX export (the exports' parents are the dirs)."""
    from model_zoo import build_bert, build_distilbert

    from edgebert.export import export

    root = tmp_path_factory.mktemp("refs")
    bert = build_bert(root / "bert-emb", seed=1)
    cls = build_distilbert(root / "distil-cls", head="sequence-classification", num_labels=2, id2label=ID2LABEL, seed=2)
    paths = {"bert": bert, "cls": cls}
    for name, model in (("bert-onnx", bert), ("cls-onnx", cls)):
        paths[name] = root / name
        export("onnx", model=str(model), out=paths[name], seq_len=32, quiet=True)
    return paths


def _job(tmp_path: Path) -> MeasureJob:
    from conftest import write_labelled_tsv

    sts = tmp_path / "sts.csv"
    sts.write_text("a man plays a guitar.,a man is playing guitar.,4.5\nthe dog runs.,prices rose.,0.2\n"
                   "a cat sleeps.,the cat is asleep.,4.0\nhello there.,the weather is cold.,1.0\n")  # fmt: skip
    labelled = write_labelled_tsv(tmp_path / "dev.tsv", 12, seed=5)
    return MeasureJob(seq_lens=[16], batches=[1], threads=[1], warmup=1, repeats=2, sts_path=str(sts),
                      sts_max_length=32, sst2_path=str(labelled))  # fmt: skip


def test_parent_mode_adds_each_exports_model_and_compares_them(family_exports: dict[str, Path]) -> None:
    labels = [s.label for s in build_config([str(family_exports["bert-onnx"]), str(family_exports["cls-onnx"])], reference=PARENT).items]
    assert labels == ["bert-emb", "bert-onnx", "distil-cls", "cls-onnx"]  # each parent inserted before its export
    config = build_config([str(family_exports["cls"]), str(family_exports["bert-onnx"]), str(family_exports["cls-onnx"])], reference=PARENT)
    assert config.reference == PARENT
    assert config.references == {"distil-cls": "distil-cls", "bert-emb": "bert-emb", "bert-onnx": "bert-emb", "cls-onnx": "distil-cls"}
    tasks = {s.label: s.task for s in config.items}
    assert tasks == {"distil-cls": "text-classification", "bert-emb": "feature-extraction", "bert-onnx": "feature-extraction",
                     "cls-onnx": "text-classification"}  # fmt: skip
    assert not any(s.unsupported for s in config.items)  # against one embedder reference the classifier export would fail


def test_parent_mode_report_has_retention_and_export_parity_per_family(family_exports: dict[str, Path], tmp_path: Path) -> None:
    config = build_config([str(family_exports["bert-onnx"]), str(family_exports["cls-onnx"])], reference=PARENT,
                          job=_job(tmp_path), isolate=False)  # fmt: skip
    run_bench(config, tmp_path / "report", echo=lambda m: None)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    items = {i["label"]: i for i in report["items"]}
    assert report["reference"] == "parent" and all(i["status"] == "ok" for i in items.values())
    assert items["bert-emb"]["reference"] and items["distil-cls"]["reference"] and not items["cls-onnx"]["reference"]
    assert items["cls-onnx"]["reference_label"] == "distil-cls"
    cls, emb = items["cls-onnx"]["derived"], items["bert-onnx"]["derived"]
    assert cls["agreement"] == 1.0 and cls["retention"] == pytest.approx(1.0)  # fp32 ONNX predicts what its model predicts
    assert cls["accuracy"] == items["distil-cls"]["classification"]["accuracy"]
    assert emb["retention"] == pytest.approx(items["bert-onnx"]["sts"]["spearman"] / items["bert-emb"]["sts"]["spearman"])
    for name in ("bert-onnx", "cls-onnx"):
        manifest = json.loads((family_exports[name] / "edgebert.json").read_text())
        assert items[name]["parity"]["min_cosine"] == manifest["parity"]["min_cosine"] and items[name]["parity"]["passed"]
        assert items[name]["parity"]["kernel_paths"] == sorted(manifest["parity"]["kernel_paths"])
    assert items["cls-onnx"]["parity"]["min_agreement"] == 1.0 and "parity" not in items["bert-emb"]
    md = (tmp_path / "report" / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| item"))
    assert [c.strip() for c in header.strip("|").split("|")][:3] == ["item", "vs", "export parity: min cos"]
    row = next(line for line in md.splitlines() if line.startswith("| cls-onnx"))
    assert row.split("|")[2].strip() == "distil-cls" and "each export's parent model" in md


def test_an_export_whose_parent_is_gone_and_a_bare_file_are_failed_items(family_exports: dict[str, Path], tmp_path: Path) -> None:
    moved = tmp_path / "orphan"
    shutil.copytree(family_exports["bert-onnx"], moved)
    manifest = json.loads((moved / "edgebert.json").read_text())
    manifest["parent"] = str(tmp_path / "deleted-model")
    (moved / "edgebert.json").write_text(json.dumps(manifest))
    bare = family_exports["bert-onnx"] / "model.onnx"
    config = build_config([str(moved), str(bare), str(family_exports["cls-onnx"])], reference=PARENT)
    by = {s.label: s for s in config.items}
    assert "orphan has no parent model on disk" in (by["orphan"].unsupported or "")
    assert "--reference ITEM" in (by["bert-onnx"].unsupported or "") and by["cls-onnx"].unsupported is None


def test_one_run_reference_is_inserted_first_or_found_by_path(family_exports: dict[str, Path]) -> None:
    from edgebert.bench.items import parse_items

    specs = parse_items([str(family_exports["bert-onnx"])])
    refs = resolve_references(specs, str(family_exports["bert"]), None, "mean")
    assert [s.label for s in specs] == ["bert-emb", "bert-onnx"] and set(refs.values()) == {"bert-emb"}
    specs = parse_items([f"mine={family_exports['bert']}", str(family_exports["bert-onnx"])])
    assert set(resolve_references(specs, str(family_exports["bert"]), None, "mean").values()) == {"mine"}
    assert set(resolve_references(specs, None, None, "mean").values()) == {"mine"}  # default: the first item


def _spec(label: str, kind: str, task: str) -> ItemSpec:
    return ItemSpec(label=label, path=f"/x/{label}", kind=kind, target="pytorch" if kind == "pytorch" else "onnx", task=task)


def test_per_item_references_settle_tasks_per_pair() -> None:
    mlm, masked = _spec("mlm", "pytorch", "fill-mask"), _spec("masked", "export", "fill-mask")
    other, enc = _spec("other-mlm", "pytorch", "fill-mask"), _spec("enc", "export", "feature-extraction")
    assign_tasks([mlm, masked, other, enc], {"mlm": "mlm", "masked": "mlm", "other-mlm": "other-mlm", "enc": "other-mlm"})
    assert mlm.task == "fill-mask" and masked.unsupported is None  # its export is fill-mask
    assert other.task == "feature-extraction" and enc.unsupported is None  # its export ships the encoder


def test_derive_uses_each_items_own_reference() -> None:
    items = [
        {"label": "a", "status": "ok", "model_bytes": 100, "sts": {"spearman": 0.8, "pairs": 4}},
        {"label": "a-x", "status": "ok", "model_bytes": 25, "sts": {"spearman": 0.76, "pairs": 4}},
        {"label": "c", "status": "ok", "model_bytes": 50, "classification": {"accuracy": 0.9, "predicted": [1, 0, 1, 1]}},
        {"label": "c-x", "status": "ok", "model_bytes": 10, "classification": {"accuracy": 0.45, "predicted": [1, 1, 0, 0]}},
    ]
    derive(items, {"a": "a", "a-x": "a", "c": "c", "c-x": "c"}, (128, 1, 1))
    d = {i["label"]: i["derived"] for i in items}
    assert d["a-x"]["retention"] == pytest.approx(0.95) and d["a-x"]["compression"] == pytest.approx(4.0)
    assert d["c-x"]["retention"] == pytest.approx(0.5) and d["c-x"]["agreement"] == 0.25 and d["c-x"]["compression"] == 5.0
