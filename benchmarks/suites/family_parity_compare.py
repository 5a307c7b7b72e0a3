"""Per-row parity of the family table against an earlier table, on the same check sentences.

    python benchmarks/suites/family_parity_compare.py OLD_TABLE.md EXPORTS_DIR > parity-compare.md

An export's manifest keeps every parity check it ran per kernel path: the sentence checks an earlier table was
measured on (natural_length / padded_batch / fixed_length) and the wide texts added since. This prints, per row of
OLD_TABLE, its parity, this export's minimum over the same sentence checks (like with like), and its minimum over
the wide texts (the stricter check the current table reports).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

TASKS = {"embedding": "emb", "classification": "cls", "fill-mask": "mask", "token classification": "tok"}
SENTENCE_CHECKS = ("natural_length", "padded_batch", "fixed_length")


def old_rows(table: Path) -> list[tuple[str, str, str, str, float]]:
    """(family, task, target, quantization, parity) of each exported row of a family table."""
    rows = []
    for line in table.read_text().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        try:
            rows.append((*cells[:4], float(cells[4])))
        except (IndexError, ValueError):
            continue  # a refused row: no parity
    return rows


def check_minimum(manifest: dict, checks: tuple[str, ...]) -> float | None:
    """The lowest min cosine over every kernel path's named checks (None when none ran)."""
    values = [
        path[check]["min_cosine"]
        for path in manifest["parity"].get("kernel_paths", {}).values()
        for check in checks
        if isinstance(path.get(check), dict) and path[check].get("min_cosine") is not None
    ]
    return min(values) if values else None


def main(table: str, exports: str) -> None:
    print("| family | task | target | quantization | earlier parity | same checks now | Δ | wide texts now |")
    print("|---|---|---|---|---|---|---|---|")
    for family, task, target, quant, before in old_rows(Path(table)):
        manifest_path = Path(exports) / f"{family}-{TASKS[task]}-{target}-{quant}" / "edgebert.json"
        if not manifest_path.exists():
            print(f"| {family} | {task} | {target} | {quant} | {before:.5f} | missing | | |")
            continue
        manifest = json.loads(manifest_path.read_text())
        same, wide = check_minimum(manifest, SENTENCE_CHECKS), check_minimum(manifest, ("wide_texts",))
        delta = "" if same is None else f"{same - before:+.5f}"
        fmt = lambda v: "–" if v is None else f"{v:.5f}"  # noqa: E731
        print(f"| {family} | {task} | {target} | {quant} | {before:.5f} | {fmt(same)} | {delta} | {fmt(wide)} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: family_parity_compare.py OLD_TABLE.md EXPORTS_DIR")
    main(*sys.argv[1:])
