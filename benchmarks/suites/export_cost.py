#!/usr/bin/env python
"""What each export costs: wall and CPU seconds per target x recipe, split by phase, one export at a time.

    .venv/bin/python benchmarks/suites/export_cost.py --model default --runs onnx:none onnx:int8 tflite:int8 tfjs:none \
        --calibration ../shared/data/corpus/sotu.txt.gz --work WORK --out benchmarks/results/export-cost/teacher

Each run is `edgebert export --target T --quantize Q` in its own process (nothing warm carried over), timed from
outside (wall, and the child's CPU seconds from the OS) and read back from its manifest (`metrics.phases`:
edgebert.cost). A run that fails (a refused recipe) keeps its outside figures and its last error line. Writes
`cost.json` and `cost.md` into --out; `--label` names the column set (e.g. the commit measured).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CALIBRATED = ("int8-static",)


def edgebert_command(target: str, quantize: str, model: str, out: Path, calibration: str | None, seq_len: int) -> list[str]:
    """The export command line of one run."""
    command = [sys.executable, "-m", "edgebert.cli", "export", "--target", target, "--model", model, "--out", str(out),
               "--seq-len", str(seq_len)]  # fmt: skip
    if quantize != "none":
        command += ["--quantize", quantize]
    if quantize in CALIBRATED:
        if not calibration:
            raise SystemExit(f"error: {target}:{quantize} calibrates: pass --calibration FILE")
        command += ["--calibration", calibration]
    return command


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(target: str, quantize: str, args: argparse.Namespace) -> dict[str, Any]:
    """One export, timed from outside; its manifest's figures when it wrote one."""
    out = args.work / f"{target}-{quantize}"
    shutil.rmtree(out, ignore_errors=True)
    command = edgebert_command(target, quantize, args.model, out, args.calibration, args.seq_len)
    wall, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    record: dict[str, Any] = {
        "target": target, "quantize": quantize, "exit": proc.returncode,
        "wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(children_cpu() - cpu, 1),
    }  # fmt: skip
    manifest_file = out / "edgebert.json"
    if manifest_file.exists():
        manifest = json.loads(manifest_file.read_text())
        metrics = manifest.get("metrics", {})
        record.update(phases=metrics.get("phases", []), min_cosine=manifest["parity"]["min_cosine"],
                      kernel_paths={k: v["min_cosine"] for k, v in manifest["parity"]["kernel_paths"].items()})  # fmt: skip
    else:
        lines = [line for line in (proc.stderr or "").strip().splitlines() if line.strip()]
        record["error"] = lines[-1][:300] if lines else ""
    return record


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def markdown(records: list[dict[str, Any]], header: dict[str, Any]) -> str:
    """The per-run table, then each run's phases."""
    lines = [f"# Export cost: {header['model']}", "",
             f"{header['cpu']}, {header['cores']} cores; edgebert at {header['label']}; `{header['command']}`; "
             f"EDGEBERT_ARM64_TEXTS={header['arm64_texts']}", "",
             "| target | recipe | exit | wall s | CPU s | min cosine |", "|---|---|---|---|---|---|"]  # fmt: skip
    for r in records:
        cosine = f"{r['min_cosine']:.6f}" if "min_cosine" in r else r.get("error", "")
        lines.append(f"| {r['target']} | {r['quantize']} | {r['exit']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {cosine} |")
    paths = [r for r in records if r.get("kernel_paths")]
    if paths:
        lines += ["", "Min cosine per kernel path (emulated ARM64 paths: a sample of each check, `arm64_texts`):", "",
                  "| target | recipe | kernel path | min cosine |", "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {r['target']} | {r['quantize']} | {name} | {value:.6f} |" for r in paths for name, value in r["kernel_paths"].items()]
    for r in records:
        if not r.get("phases"):
            continue
        lines += ["", f"## {r['target']} {r['quantize']}", "", "| phase | wall s | CPU s |", "|---|---|---|"]
        lines += [f"| {p['phase']} | {p['wall_s']:.2f} | {p['cpu_s']:.2f} |" for p in r["phases"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default", help="model dir, hub id or 'default'")
    parser.add_argument("--runs", nargs="+", required=True, help="target:recipe pairs (recipe 'none' for fp32)")
    parser.add_argument("--calibration", help="calibration text for int8-static")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--work", type=Path, required=True, help="where the exports are written (replaced)")
    parser.add_argument("--out", type=Path, required=True, help="report directory")
    parser.add_argument("--label", default="", help="what was measured (e.g. a commit)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    model_name = args.model if args.model == "default" else Path(args.model).name
    header = {"model": model_name, "label": args.label or "HEAD", "cpu": cpu_name(), "cores": os.cpu_count(),
              "command": " ".join(["benchmarks/suites/export_cost.py", *sys.argv[1:]]), "load_average": os.getloadavg(),
              "arm64_texts": os.environ.get("EDGEBERT_ARM64_TEXTS", "default")}  # fmt: skip
    records = []
    for pair in args.runs:
        target, _, quantize = pair.partition(":")
        records.append(run_one(target, quantize or "none", args))
        print(f"{pair}: exit {records[-1]['exit']}, {records[-1]['wall_s']} s wall, {records[-1]['cpu_s']} s CPU", flush=True)
        (args.out / "cost.json").write_text(json.dumps({**header, "runs": records}, indent=1))
    (args.out / "cost.md").write_text(markdown(records, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
