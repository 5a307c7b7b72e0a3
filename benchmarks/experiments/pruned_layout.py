#!/usr/bin/env python
"""What the stock-shaped layout of a head-pruned directory costs and what it leaves unchanged.

    .venv/bin/python benchmarks/experiments/pruned_layout.py --model default --calibration ../shared/data/corpus/sotu.txt.gz \
        --work WORK --out benchmarks/results/pruned-layout

Prunes heads (and FFN neurons) of the model with `edgebert compress`, which writes the removed heads as zeros at the
stock shapes; writes the same model narrowed beside it (the layout edgebert wrote before); then measures:
- bytes of each directory's model.safetensors;
- PyTorch latency (one thread, batch 1, seq 16 and 128, interleaved runs): the stock class on the stock-shaped
  directory (it computes the zero heads) against edgebert's narrowed model;
- the ONNX and TFLite int8 exports of both directories: their bytes and whether the files are identical.
Writes report.json and report.md into --out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def edgebert(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "edgebert.cli", *args], check=True, cwd=ROOT)


def narrowed_copy(stock_dir: Path, out: Path) -> None:
    """The same model with narrowed matrices (edgebert's loader narrows the stock-shaped one; saved as is)."""
    from safetensors.torch import save_file

    from edgebert.modelio import load_model

    shutil.copytree(stock_dir, out)
    base = load_model(stock_dir).embedder.encoder
    save_file({k: v.contiguous() for k, v in base.state_dict().items()}, str(out / "model.safetensors"), metadata={"format": "pt"})


def latency(stock_dir: Path, seq_lens: list[int], repeats: int) -> dict[str, dict[int, float]]:
    """Median ms per call of the stock AutoModel on the stock-shaped directory and of edgebert's narrowed model."""
    import statistics

    import torch
    from transformers import AutoModel

    from edgebert.modelio import load_model

    torch.set_num_threads(1)
    models = {"stock AutoModel (zero heads computed)": AutoModel.from_pretrained(stock_dir, trust_remote_code=False).eval(),
              "edgebert narrowed": load_model(stock_dir).embedder.encoder.eval()}  # fmt: skip
    result: dict[str, dict[int, float]] = {name: {} for name in models}
    for n in seq_lens:
        ids = torch.full((1, n), 1000, dtype=torch.long)
        feed = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
        times: dict[str, list[float]] = {name: [] for name in models}
        with torch.inference_mode():
            for model in models.values():
                model(**feed)
            for _ in range(repeats):  # interleaved: both see the same machine state
                for name, model in models.items():
                    start = time.perf_counter()
                    model(**feed)
                    times[name].append(time.perf_counter() - start)
        for name in models:
            result[name][n] = round(1000 * statistics.median(times[name]), 3)
    return result


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default")
    parser.add_argument("--calibration", required=True)
    parser.add_argument("--prune-heads", default="0.25")
    parser.add_argument("--prune-ffn", default="0.3")
    parser.add_argument("--repeats", type=int, default=30, help="PyTorch timing calls per length (0: no timing)")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    stock, narrowed = args.work / "stock-shaped", args.work / "narrowed"
    edgebert("compress", "--model", args.model, "--out", str(stock), "--prune-heads", args.prune_heads,
             "--prune-ffn", args.prune_ffn, "--calibration", args.calibration)  # fmt: skip
    narrowed_copy(stock, narrowed)
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/experiments/pruned_layout.py", *sys.argv[1:]]), "machine": platform.machine(),
        "cpu": next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), ""),
        "pruned_heads": json.loads((stock / "config.json").read_text())["pruned_heads"],
        "safetensors_bytes": {d.name: (d / "model.safetensors").stat().st_size for d in (stock, narrowed)},
        "pytorch_ms": latency(stock, [16, 128], args.repeats) if args.repeats else None,
        "exports": {},
    }  # fmt: skip
    for target in ("onnx", "tflite"):
        files = {}
        for source in (stock, narrowed):
            out = args.work / f"{source.name}-{target}-int8"
            edgebert("export", "--target", target, "--quantize", "int8", "--model", str(source), "--out", str(out))
            model_file = next(p for p in out.iterdir() if p.suffix in (".onnx", ".tflite"))
            files[source.name] = {"bytes": model_file.stat().st_size, "sha256": sha(model_file),
                                  "min_cosine": json.loads((out / "edgebert.json").read_text())["parity"]["min_cosine"]}  # fmt: skip
        report["exports"][f"{target} int8"] = files
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    lines = [f"# Head-pruned layout: {args.model}, heads {args.prune_heads}, FFN {args.prune_ffn}", "", f"{report['cpu']}; `{report['command']}`", "",
             "| | stock-shaped (zeros) | narrowed |", "|---|---|---|",
             f"| model.safetensors bytes | {report['safetensors_bytes']['stock-shaped']:,} | {report['safetensors_bytes']['narrowed']:,} |"]  # fmt: skip
    for n in (16, 128) if report["pytorch_ms"] else ():
        times = list(report["pytorch_ms"].values())
        lines.append(f"| PyTorch ms, seq {n} (stock class / edgebert) | {times[0][n]} | {times[1][n]} |")
    for name, files in report["exports"].items():
        a, b = files["stock-shaped"], files["narrowed"]
        lines.append(f"| {name} bytes, sha256 | {a['bytes']:,} {a['sha256']} | {b['bytes']:,} {b['sha256']} |")
    (args.out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
