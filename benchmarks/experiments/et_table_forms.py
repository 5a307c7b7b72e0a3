#!/usr/bin/env python
"""Two ExecuTorch exports of one model side by side: program bytes, parity, kernel libraries and the median call
time at 16 and 128 tokens (one text, the programs' calls interleaved so both meet the same machine state).

    .venv/bin/python benchmarks/experiments/et_table_forms.py BYTE_DIR PORTABLE_DIR > benchmarks/results/et-tables/report.json

Made for the int8 tables' two forms: `quantized_decomposed::embedding_byte` (an export made before the portable
form, with the quantized kernel library) against the portable embedding kernel scaled in the graph.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from edgebert.targets.executorch.runner import ExecuTorchRunner


def main(dirs: list[str]) -> int:
    runners, report = {}, {"exports": {}, "median_ms": {}}
    for d in map(Path, dirs):
        manifest = json.loads((d / "edgebert.json").read_text())
        names, outputs = [i["name"] for i in manifest["inputs"]], [o["name"] for o in manifest["outputs"]]
        runners[d.name] = (ExecuTorchRunner(d / "model.pte", names, outputs), names)
        report["exports"][d.name] = {"bytes": (d / "model.pte").stat().st_size, "min_cosine": manifest["parity"]["min_cosine"],
                                     "tables": manifest["target_details"]["quantization"]["tables"],
                                     "kernel_libraries": manifest["target_details"].get("kernel_libraries")}  # fmt: skip
    for n in (16, 128):
        times: dict[str, list[float]] = {k: [] for k in runners}
        for _ in range(5 + (100 if n == 16 else 40)):
            for key, (runner, names) in runners.items():
                feed = {"input_ids": np.full((1, n), 1000, np.int64), "attention_mask": np.ones((1, n), np.int64), "token_type_ids": np.zeros((1, n), np.int64)}
                start = time.perf_counter()
                runner.run({k: feed[k] for k in names})
                times[key].append(time.perf_counter() - start)
        report["median_ms"][n] = {k: round(1000 * statistics.median(v[5:]), 3) for k, v in times.items()}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
