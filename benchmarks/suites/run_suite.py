#!/usr/bin/env python
"""Run a bench suite: compress and export what it lists (skipping outputs already there), then `edgebert bench` them all.

    .venv/bin/python benchmarks/suites/run_suite.py benchmarks/suites/teacher.toml --work WORK --out benchmarks/results/teacher

A suite's paths are relative to the repository root; `$VARIABLES` in them are expanded, and `$WORK` is --work.
`[[compress]]` entries (model, out, and any `edgebert compress` options as keys, e.g. prune_heads = 0.33) run
`edgebert compress` first, so `[[model]]` / `[[export]]` entries can use their `out`.
An export that fails (e.g. a target whose toolchain is missing) is reported and left out of the bench;
the bench itself marks any item that fails to load or run as failed and carries on.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def edgebert(*args: str) -> list[str]:
    exe = Path(sys.executable).with_name("edgebert")
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "edgebert.cli", *args]


def bench_command() -> list[str]:
    """`edgebert bench` when the CLI has it, else the identical `python -m edgebert.bench`."""
    probe = subprocess.run(edgebert("bench", "--help"), capture_output=True, text=True)
    return edgebert("bench") if probe.returncode == 0 else [sys.executable, "-m", "edgebert.bench"]


def resolve(path: str) -> str:
    """A suite's path: "default", or a path relative to the repository root ($VARIABLES expanded)."""
    if path == "default":
        return path
    expanded = os.path.expandvars(path)
    if "$" in expanded:
        raise SystemExit(f"error: {path!r} names an unset environment variable; set it to the model directory")
    return str((ROOT / expanded).resolve())


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", type=Path)
    parser.add_argument("--work", type=Path, required=True, help="where exports are written ($WORK in the suite)")
    parser.add_argument("--out", type=Path, required=True, help="report directory")
    parser.add_argument("--force", action="store_true", help="replace a non-empty --out")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args()

    os.environ["WORK"] = str(args.work.resolve())
    suite = tomllib.loads(args.suite.read_text())
    bench = suite.get("bench", {})
    for entry in suite.get("compress", []):
        options = {k: v for k, v in entry.items() if k not in ("model", "out")}
        model_arg = resolve(entry["model"])
        out = Path(resolve(entry["out"]))
        cmd = edgebert("compress", "--model", model_arg, "--out", str(out))
        for key, value in options.items():
            if value is False:
                continue
            if key == "calibration":
                value = resolve(value)
            cmd += [f"--{key.replace('_', '-')}", *([] if value is True else [str(value)])]
        if not (out / "edgebert.json").exists():
            print("$", " ".join(cmd), flush=True)
            if not args.dry_run and subprocess.run(cmd).returncode != 0:
                print(f"compress {out} failed", flush=True)
                return 1
    items: list[str] = []
    for model in suite.get("model", []):
        path = resolve(model["path"])
        items.append(f"{model['label']}={path}")
    exports_dir = args.work / "exports"
    for entry in suite.get("export", []):
        model = entry["model"]
        name = entry.get("name") or ("teacher" if model == "default" else slug(Path(model).name))
        model_arg = resolve(model)
        for target, quants in entry["targets"].items():
            for quant in quants:
                out = exports_dir / f"{name}-{target}-{quant}"
                cmd = edgebert("export", "--model", model_arg, "--target", target, "--quantize", quant,
                               "--seq-len", str(entry.get("seq_len", 128)), "--out", str(out))
                if not (out / "edgebert.json").exists():
                    print("$", " ".join(cmd), flush=True)
                    if not args.dry_run and subprocess.run(cmd).returncode != 0:
                        print(f"export {target}/{quant} failed: left out of the bench", flush=True)
                        continue
                items.append(f"{name}-{target}-{quant}={out}")

    cmd = [*bench_command(), *items, "--out", str(args.out), "--reference", bench.get("reference", items[0].split("=")[0])]
    for key, flag in (("seq_len", "--seq-len"), ("batch", "--batch"), ("threads", "--threads")):
        if key in bench:
            cmd += [flag, *map(str, bench[key])]
    for key, flag in (("warmup", "--warmup"), ("repeats", "--repeats"), ("sts_limit", "--sts-limit"), ("timeout", "--timeout")):
        if key in bench:
            cmd += [flag, str(bench[key])]
    for target, limit in bench.get("sts_limit_for", {}).items():
        cmd += ["--sts-limit-for", f"{target}={limit}"]
    if "sts" in bench:
        cmd += ["--sts", str((ROOT / bench["sts"]).resolve())]
    if "sst2" in bench:
        cmd += ["--sst2", str((ROOT / bench["sst2"]).resolve())]
    if bench.get("torch_int8"):
        cmd.append("--torch-int8")
    if args.force:
        cmd.append("--force")
    print("$", " ".join(cmd), flush=True)
    return 0 if args.dry_run else subprocess.run(cmd).returncode


if __name__ == "__main__":
    raise SystemExit(main())
