#!/usr/bin/env python
"""The family x task x target x quantization table from `family_table.sh`'s bench report and refusals, as markdown.

    .venv/bin/python benchmarks/suites/family_summary.py OUT_DIR      # OUT_DIR: family_table.sh's (report.json, refused.tsv)

One row per export: family, task, target, quantization, the export's own parity (worst cosine over every kernel path
against the model's library), size, the task metric in the export's runtime and its retention against its own model
(`bench --reference parent`); refused exports with their refusal. Model rows (the references) are left out.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from edgebert.bench.report import TASK_SHORT

TASKS = {"feature-extraction": "embedding", "text-classification": "classification", "fill-mask": "fill-mask",
         "token-classification": "token classification"}  # fmt: skip
NAMED_TASKS = {short: task for task, short in TASK_SHORT.items()}  # family_table.sh names models FAMILY-emb, -cls, ...


def family_of(label: str) -> str:
    return label.split("-", 1)[0]


def metric(item: dict) -> str:
    d = item.get("derived") or {}
    if item.get("sts"):
        return f"STS-B ρ {item['sts']['spearman']:.4f} ({item['sts']['pairs']} pairs)"
    if item.get("classification"):
        return f"accuracy {d['accuracy']:.4f}, agreement {d['agreement']:.1%}"
    return f"agreement {d['agreement']:.1%}" if d.get("agreement") is not None else "–"


def rows(out: Path) -> list[str]:
    report = json.loads((out / "report.json").read_text())
    lines = ["| family | task | target | quantization | export parity (min cos) | MB | task metric | retention vs its model |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for item in report["items"]:
        if item.get("reference") or item.get("target") == "pytorch":
            continue
        spec, d, parity = item.get("spec") or {}, item.get("derived") or {}, item.get("parity") or {}
        status = "" if item.get("status") == "ok" else f" ({item.get('status')}: {str(item.get('error'))[:80]})"
        retention = f"{d['retention']:.2%}" if d.get("retention") is not None else "–"
        lines.append(
            f"| {family_of(item['label'])} | {TASKS.get(spec.get('task'), spec.get('task'))} | {item['target']} | "
            f"{item['quantization']} | {parity.get('min_cosine', float('nan')):.5f} | {item.get('model_bytes', 0) / 1e6:.1f} | "
            f"{metric(item)}{status} | {retention} |"
        )
    refused = out / "refused.tsv"
    for name, _model, target, quant, reason in csv.reader(refused.open(), delimiter="\t") if refused.exists() else []:
        why = reason.split("failed: ", 1)[-1].split("; nothing was written")[0]
        task = TASKS.get(NAMED_TASKS.get(name.split("-")[1], ""), "?")
        lines.append(f"| {family_of(name)} | {task} | {target} | {quant} | refused: {why} | | | |")
    return lines


if __name__ == "__main__":
    print("\n".join(rows(Path(sys.argv[1]))))
