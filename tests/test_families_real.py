"""Real weights in every family: the packaged teacher re-laid into DistilBERT, RoBERTa and ELECTRA layouts
(benchmarks/suites/relayout_teacher.py) computes the teacher's embeddings, so each family's ONNX int8 export must score the
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
    script = ROOT / "benchmarks" / "suites" / "relayout_teacher.py"
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


@pytest.fixture(scope="session")
def real_mpnet() -> Path:
    """all-mpnet-base-v2 as benchmarks/suites/fetch_mpnet.py assembles it from PyPI (430 MB, so not in CI): $EDGEBERT_MPNET."""
    import os

    path = Path(os.environ.get("EDGEBERT_MPNET", "")).expanduser()
    if not os.environ.get("EDGEBERT_MPNET") or not (path / "config.json").is_file():
        pytest.skip("set EDGEBERT_MPNET to all-mpnet-base-v2 (benchmarks/suites/fetch_mpnet.py DEST) to run the MPNet tests")
    return path


@pytest.mark.integration
def test_real_mpnet_embeds_as_sentence_transformers_does_and_exports_at_parity(real_mpnet: Path, tmp_path: Path) -> None:
    """edgebert's PyTorch embedder of all-mpnet-base-v2 equals SentenceTransformer.encode; its ONNX int8 export passes
    the parity gate on every kernel path."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from edgebert.export import export
    from edgebert.modelio import load_model
    from edgebert.parity import PARITY_SENTENCES, encode

    texts = list(PARITY_SENTENCES)
    expected = SentenceTransformer(str(real_mpnet), device="cpu", trust_remote_code=False).encode(texts, batch_size=len(texts))
    loaded = load_model(real_mpnet)
    batch = encode(loaded.tokenizer, texts, 128, pad_to_seq_len=False)
    with torch.no_grad():
        got = loaded.embedder(*[torch.from_numpy(batch[n]) for n in loaded.family.input_names()])[0].numpy()
    assert loaded.family.name == "mpnet" and np.abs(got - expected).max() < 1e-5
    report = export("onnx", model=real_mpnet, out=tmp_path / "onnx-int8", quantize="int8", quiet=True)
    assert report.parity["passed"] and report.manifest["model"]["family"] == "mpnet"
