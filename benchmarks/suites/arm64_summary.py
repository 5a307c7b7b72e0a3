#!/usr/bin/env python
"""Each export's parity on every kernel path, the emulated ARM64 ones beside the host's, from its manifest.

    .venv/bin/python benchmarks/suites/arm64_summary.py EXPORT_DIR...

One row per export directory (an `edgebert.json` of kind "export"): target, quantization, the worst cosine to the
model's library on each kernel path (host and emulated x86 paths over every parity text; `arm64-<cpu>` paths over the
first texts of each check, `texts_per_check`), and the emulator that ran the ARM64 paths. An export whose ARM64 paths
were not run says why; one without integer kernels has none.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def row(export_dir: Path) -> tuple[str, str]:
    """(markdown row, emulator line) of one export."""
    manifest = json.loads((export_dir / "edgebert.json").read_text())
    parity = manifest.get("parity") or {}
    paths = {name: entry["min_cosine"] for name, entry in (parity.get("kernel_paths") or {}).items()}
    arm = parity.get("arm64") or {}
    figures = ", ".join(f"{name} {value:.6f}" for name, value in paths.items())
    if arm and not arm.get("checked"):
        figures += f"; ARM64 not checked: {arm.get('reason')}"
    elif not arm:
        figures += "; no ARM64 path (no integer kernels)"
    arm_values = [v for k, v in paths.items() if k.startswith("arm64-")]
    worst_arm = f"{min(arm_values):.6f}" if arm_values else "–"
    line = f"| {export_dir.name} | {manifest.get('target')} | {manifest.get('quantization')} | {parity.get('min_cosine', float('nan')):.6f} | {worst_arm} | {figures} |"
    emulator = f"{arm.get('emulator')}, {arm.get('texts_per_check')} texts per check" if arm.get("checked") else ""
    return line, emulator


def main(dirs: list[Path]) -> None:
    lines = ["| export | target | quantization | worst of every path | worst ARM64 path | each kernel path (min cosine) |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    emulators = set()
    for d in dirs:
        if (d / "edgebert.json").is_file():
            line, emulator = row(d)
            lines.append(line)
            emulators.add(emulator)
    print("\n".join(lines))
    for emulator in sorted(e for e in emulators if e):
        print(f"\nARM64 paths: {emulator}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main([Path(a) for a in sys.argv[1:]])
