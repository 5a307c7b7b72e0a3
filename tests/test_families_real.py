"""Real weights in every family: the packaged teacher re-laid into DistilBERT, RoBERTa and ELECTRA layouts
(benchmarks/relayout_teacher.py) computes the teacher's embeddings, so each family's ONNX int8 export must score the
teacher's STS-B (integration: the packaged teacher and ../shared/data)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("distilbert", "roberta", "electra")
PAIRS = 300  # the first STS-B dev pairs: enough for a stable Spearman, minutes not hours


@pytest.mark.integration
def test_relaid_teacher_exports_score_the_teachers_sts(packaged_teacher: Path, shared_data: Path, tmp_path: Path) -> None:
    from edgebert.api import bench
    from edgebert.export import export

    relaid = tmp_path / "relaid"
    script = ROOT / "benchmarks" / "relayout_teacher.py"
    done = subprocess.run([sys.executable, str(script), str(packaged_teacher), str(relaid)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    items = [f"teacher={packaged_teacher}"]
    for family in FAMILIES:
        out = tmp_path / f"{family}-onnx-int8"
        report = export("onnx", model=relaid / family, out=out, quantize="int8", quiet=True)
        assert report.manifest["model"]["family"] == family and report.parity["passed"]
        items.append(f"{family}={out}")
    sts = shared_data / "stsb" / "dev.csv"
    outcome = bench(items, tmp_path / "bench", sts=str(sts), sts_limit=PAIRS, warmup=1, repeats=3, in_process=True, texts_limit=0, quiet=True)
    results = {i["label"]: i for i in json.loads((outcome.out_dir / "report.json").read_text())["items"]}
    teacher = results["teacher"]["sts"]["spearman"]
    assert teacher > 0.8, teacher
    for family in FAMILIES:
        item = results[family]
        assert item["status"] == "ok", item.get("error")
        assert abs(item["sts"]["spearman"] - teacher) < 0.01, (family, item["sts"]["spearman"], teacher)  # int8: ~1e-3
