"""`edgebert bench`: size, latency, memory and accuracy retention of model dirs, exports and bare model files.

- `items`   what an ITEM is (model dir, export dir, bare .onnx/.tflite + tokenizer) and how to load and run it
- `measure` latency, peak memory, STS-B / SST-2 for one item (run in a worker subprocess per item)
- `metrics` the accuracy metrics (STS Spearman via `edgebert.evaluate`, SST-2 accuracy) and Pareto arithmetic
- `references` which item each item is compared to (one run-wide reference, or each export's parent model)
- `harness` runs every item, keeps going past failures, keeps what was measured on Ctrl-C
- `report`  retention / speed-up / compression against each item's reference, and report.json / .md / .png
"""

from edgebert.bench.harness import BenchRun, plan_bench, run_bench
from edgebert.config import BenchConfig

__all__ = ["BenchConfig", "BenchRun", "plan_bench", "run_bench"]
