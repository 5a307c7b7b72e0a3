#!/usr/bin/env python
"""The family x task x target x quantization table from `family_table.sh`'s bench report and refusals, as markdown.

    .venv/bin/python benchmarks/suites/family_summary.py OUT_DIR [--previous OLD_TABLE]

OUT_DIR: family_table.sh's (report.json, refused.tsv). One row per export: family, task, target, quantization, the
export's own parity (worst cosine over every kernel path against the model's library), the worst of its ARM64 kernel
paths (read from the export's manifest: "–" for exports without integer kernels, which have none), size, the task
metric in the export's runtime and its retention against its own model (`bench --reference parent`); refused exports
with their refusal. Model rows (the references) are left out. `--previous OLD_TABLE`: the rows of an earlier table
(this script's markdown) that this run did not make (family_table.sh's ROWS) are kept, marked "(earlier run)".
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from edgebert.bench.report import TASK_SHORT

TASKS = {"feature-extraction": "embedding", "text-classification": "classification", "fill-mask": "fill-mask",
         "token-classification": "token classification"}  # fmt: skip
NAMED_TASKS = {short: task for task, short in TASK_SHORT.items()}  # family_table.sh names models FAMILY-emb, -cls, ...
HEADER = ["| family | task | target | quantization | export parity (min cos) | ARM64 (min cos) | MB | task metric | retention vs its model |",
          "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
EARLIER = " (earlier run)"


def family_of(label: str) -> str:
    return label.split("-", 1)[0]


def metric(item: dict) -> str:
    d = item.get("derived") or {}
    if item.get("sts"):
        return f"STS-B ρ {item['sts']['spearman']:.4f} ({item['sts']['pairs']} pairs)"
    if item.get("classification"):
        return f"accuracy {d['accuracy']:.4f}, agreement {d['agreement']:.1%}"
    return f"agreement {d['agreement']:.1%}" if d.get("agreement") is not None else "–"


def arm64(export_dir: str | None) -> str:
    """The worst cosine over the export's ARM64 kernel paths, with the CPU models ('–' without any; 'not checked'
    when the export says its ARM64 paths were not run)."""
    path = Path(export_dir or "") / "edgebert.json"
    if not path.is_file():
        return "?"
    parity = json.loads(path.read_text()).get("parity") or {}
    paths = {k.removeprefix("arm64-"): v["min_cosine"] for k, v in (parity.get("kernel_paths") or {}).items() if k.startswith("arm64-")}
    if paths:
        return f"{min(paths.values()):.5f} ({', '.join(sorted(paths))})"
    return "not checked" if (parity.get("arm64") or {}).get("checked") is False else "–"


def rows(out: Path) -> list[str]:
    report = json.loads((out / "report.json").read_text())
    lines = []
    for item in report["items"]:
        if item.get("reference") or item.get("target") == "pytorch":
            continue
        spec, d, parity = item.get("spec") or {}, item.get("derived") or {}, item.get("parity") or {}
        status = "" if item.get("status") == "ok" else f" ({item.get('status')}: {str(item.get('error'))[:80]})"
        retention = f"{d['retention']:.2%}" if d.get("retention") is not None else "–"
        lines.append(
            f"| {family_of(item['label'])} | {TASKS.get(spec.get('task'), spec.get('task'))} | {item['target']} | "
            f"{item['quantization']} | {parity.get('min_cosine', float('nan')):.5f} | {arm64(spec.get('path'))} | "
            f"{item.get('model_bytes', 0) / 1e6:.1f} | {metric(item)}{status} | {retention} |"
        )
    refused = out / "refused.tsv"
    for name, _model, target, quant, reason in csv.reader(refused.open(), delimiter="\t") if refused.exists() else []:
        why = reason.split("failed: ", 1)[-1].split("; nothing was written")[0]
        task = TASKS.get(NAMED_TASKS.get(name.split("-")[1], ""), "?")
        lines.append(f"| {family_of(name)} | {task} | {target} | {quant} | refused: {why} | | | | |")
    return lines


def key(line: str) -> tuple[str, ...]:
    """(family, task, target, quantization) of a table row."""
    return tuple(cell.strip() for cell in line.strip().strip("|").split("|")[:4])


def previous_rows(table: Path, made: set[tuple[str, ...]]) -> list[str]:
    """The rows of an earlier table this run did not make, in this table's columns (no ARM64 figure: "–"), marked."""
    kept = []
    for line in table.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] in ("family", "---") or key(line) in made:
            continue
        if len(cells) == 8:  # the table before the ARM64 column
            cells.insert(5, "–")
        cells[3] += EARLIER
        kept.append("| " + " | ".join(cells) + " |")
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--previous", type=Path, help="an earlier table whose rows this run did not make are kept")
    args = parser.parse_args()
    lines = rows(args.out)
    if args.previous:
        lines += previous_rows(args.previous, {key(line) for line in lines})
    print("\n".join(HEADER + sorted(lines, key=lambda line: (key(line)[0], key(line)[1], "refused" in line, key(line)[2:]))))


if __name__ == "__main__":
    main()
