"""ExecuTorch exports against each other, calls interleaved (A B A B ...), so each file sees the same machine load.

    python benchmarks/suites/et_call_compare.py [--calls N] [--rounds R] LABEL=EXPORT_DIR ...

Each EXPORT_DIR is an `edgebert export --target executorch` directory (model.pte + edgebert.json). One token sequence
of real-looking ids at each of 16 and 128 tokens, batch 1; ExecuTorch's XNNPACK delegate runs one thread by default.
Prints the median ms per file and length for each round, and the ratio of each file to the first. The machine should
be idle.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

LENGTHS = (16, 128)


def load(export_dir: Path):  # noqa: ANN201 - an ExecuTorchRunner
    from edgebert.targets.executorch.runner import ExecuTorchRunner

    manifest = json.loads((export_dir / "edgebert.json").read_text())
    names = [i["name"] for i in manifest["inputs"]]
    return ExecuTorchRunner(export_dir / "model.pte", names, [o["name"] for o in manifest["outputs"]]), names


def feed(names: list[str], length: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(length)
    ids = rng.integers(1000, 8000, (1, length))
    ids[0, 0], ids[0, -1] = 101, 102
    return {n: ids if n == "input_ids" else np.ones_like(ids) if n == "attention_mask" else np.zeros_like(ids) for n in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="+", metavar="LABEL=EXPORT_DIR")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    runners = {label: load(Path(path)) for label, path in (e.split("=", 1) for e in a.exports)}
    for r in range(a.rounds):
        for length in LENGTHS:
            feeds = {label: feed(names, length) for label, (_, names) in runners.items()}
            times: dict[str, list[float]] = {label: [] for label in runners}
            for i in range(a.calls + 10):
                for label, (runner, _) in runners.items():
                    start = time.perf_counter()
                    runner.run(feeds[label])
                    if i >= 10:  # the first calls warm up
                        times[label].append(time.perf_counter() - start)
            medians = {label: 1e3 * float(np.median(t)) for label, t in times.items()}
            first = next(iter(medians.values()))
            print(f"round {r + 1} seq {length}: " + "  ".join(f"{k} {v:.3f} ms ({v / first:.2f}x)" for k, v in medians.items()), flush=True)


if __name__ == "__main__":
    main()
