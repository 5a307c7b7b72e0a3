"""ARM64 kernel paths of an export: its integer kernels run by the runtime's own aarch64 build under qemu
(`edgebert.arm64`), on the phone CPU models whose int8 kernels differ (NEON without dot product, dot product, i8mm
with SVE2). Emulation costs seconds a row, so each path runs a sample of the parity texts (`edgebert.arm64.texts`,
chosen once per export, the same for every path); the CPU models run side by side, one emulated child each.

`EDGEBERT_ARM64_TEXTS=0` turns the paths off (the manifest then says the ARM64 kernels were not checked, and why).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from edgebert import arm64, buckets
from edgebert.config import ARM64_CPUS
from edgebert.targets.base import KernelPath, Runner, named_output

def not_checked(reason: str) -> dict[str, Any]:
    """The manifest's record of ARM64 kernels that were not checked."""
    return {"checked": False, "reason": reason}


class _Batch:
    """The emulated children of one export, one per ARM64 kernel path (a CPU model, and for LiteRT its kernels): the
    first path asked runs every child on the same rows, as many side by side as the host has cores (the slow ones
    first), and the others take their results."""

    def __init__(self) -> None:
        self.children: dict[str, tuple[str, Any]] = {}  # path name -> (CPU model, make_job(rows, signatures))
        self.key: tuple[Any, ...] | None = None
        self.outputs: dict[str, list[dict[str, np.ndarray]]] = {}
        self.meta: dict[str, dict[str, Any]] = {}
        self.feeds: list[dict[str, np.ndarray]] = []

    def add(self, name: str, cpu: str, make_job: Any, slow: bool = False) -> None:
        """Path `name`'s child: `make_job` on CPU model `cpu`; a `slow` one starts first, so the pool ends together."""
        self.children = {name: (cpu, make_job), **self.children} if slow else {**self.children, name: (cpu, make_job)}

    def run(self, name: str, rows: list[Any], signatures: list[Any], key: tuple[Any, ...], feeds: list[Any]) -> list[dict[str, np.ndarray]]:
        """Path `name`'s outputs for `rows` (of `feeds`, identified by `key`: the ids of their arrays); the feeds
        are held while their results are kept, so no other array can take one of those ids meanwhile."""
        if key != self.key:
            from edgebert import cpu as host_cpu

            def one(child: str) -> Any:
                model, make_job = self.children[child]
                return arm64.run_jobs([make_job(rows, signatures)], model)

            order = list(self.children)
            with ThreadPoolExecutor(max(1, min(len(order), host_cpu.cores()))) as pool:
                runs = dict(zip(order, pool.map(one, order)))
            self.outputs = {child: run.jobs[0].outputs for child, run in runs.items()}
            self.meta = {child: {"emulated_s": round(run.wall_s, 1), "features": run.features} for child, run in runs.items()}
            self.key, self.feeds = key, feeds
        return self.outputs[name]


class Arm64Runner(Runner):
    """One runtime's aarch64 build on one emulated CPU model (kernel path `name`). `prepare` maps a feed to its rows
    (one dict of arrays per row, and for LiteRT the signature of each) and `finish` the rows' outputs back to the
    feed's outputs; the runner's child joins `batch` (`slow`: started first)."""

    def __init__(self, batch: _Batch, name: str, cpu: str, make_job: Any, prepare: Any, finish: Any, slow: bool = False) -> None:
        self.batch, self.name, self.cpu = batch, name, cpu
        self.prepare, self.finish = prepare, finish
        batch.add(name, cpu, make_job, slow)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.run_many([inputs])[0]

    def run_many(self, feeds: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
        prepared = [self.prepare(feed) for feed in feeds]
        rows = [row for part in prepared for row in part[0]]
        signatures = [s for part in prepared for s in part[1]]
        key = tuple(id(v) for feed in feeds for v in feed.values()) + (len(feeds),)
        outputs = iter(self.batch.run(self.name, rows, signatures, key, feeds))
        return [self.finish(feed, [next(outputs) for _ in part[0]]) for feed, part in zip(feeds, prepared)]


def onnx_paths(path: Path) -> dict[str, KernelPath]:
    """onnxruntime's aarch64 build on each CPU model (`ARM64_CPUS`), dynamic shapes: each feed runs as it is."""
    batch = _Batch()

    def make_job(rows: list[dict[str, np.ndarray]], _: list[Any]) -> Any:
        return arm64.Job(path, "onnxruntime", rows)

    def prepare(feed: dict[str, np.ndarray]) -> tuple[list[dict[str, np.ndarray]], list[None]]:
        return [feed], [None]

    def finish(feed: dict[str, np.ndarray], outputs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {name: named_output(name, value) for name, value in outputs[0].items()}

    return {
        path_name(model): KernelPath(description(model, "onnxruntime"), Arm64Runner(batch, path_name(model), model, make_job, prepare, finish), texts=arm64.texts())
        for model in ARM64_CPUS
    }


def tflite_paths(path: Path, signatures: dict[int, str], input_names: dict[int, list[str]], side: str) -> dict[str, KernelPath]:
    """LiteRT's aarch64 build with its XNNPACK delegate on each CPU model, and its built-in kernels on the first
    with a dot product: each row padded to its bucket's signature, as `TFLiteRunner` runs it. Every path's child runs
    in one pool, the built-in kernels' (the slowest) first."""
    lengths = tuple(sorted(signatures))
    paths, batch = {}, _Batch()
    for kernels, models in (("xnnpack", ARM64_CPUS), ("builtin", ARM64_CPUS[1:2])):

        def make_job(rows: list[dict[str, np.ndarray]], names: list[Any], kernels: str = kernels) -> Any:
            return arm64.Job(path, "litert", rows, kernels=kernels, signature=names)

        def prepare(feed: dict[str, np.ndarray]) -> tuple[list[dict[str, np.ndarray]], list[str]]:
            bucket = buckets.pick(feed["input_ids"].shape[1], lengths)
            fitted = buckets.fit(feed, bucket, input_names[bucket], side=side)
            count = len(feed["input_ids"])
            return [{n: v[r : r + 1] for n, v in fitted.items()} for r in range(count)], [signatures[bucket]] * count

        def finish(feed: dict[str, np.ndarray], outputs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
            width = feed["input_ids"].shape[1]
            stacked = {n: np.concatenate([np.asarray(o[n]) for o in outputs]) for n in outputs[0]}
            return {n: named_output(n, buckets.cut(v, width, side)) for n, v in stacked.items()}

        for model in models:
            name = path_name(model) + ("" if kernels == "xnnpack" else "-builtin")
            text = description(model, "LiteRT with XNNPACK" if kernels == "xnnpack" else "LiteRT built-in kernels")
            runner = Arm64Runner(batch, name, model, make_job, prepare, finish, slow=kernels == "builtin")
            paths[name] = KernelPath(text, runner, texts=arm64.texts())
    return paths


def executorch_paths(path: Path, names: tuple[list[str], list[str]], static_seq_len: int | None, side: str) -> dict[str, KernelPath]:
    """ExecuTorch's aarch64 runtime with its XNNPACK delegate on each CPU model: each feed runs as it is, or padded
    to the program's one length on `side` (a program of a fixed length), as `ExecuTorchRunner` runs it."""
    batch = _Batch()

    def make_job(rows: list[dict[str, np.ndarray]], _: list[Any]) -> Any:
        return arm64.Job(path, "executorch", rows, names=names)

    def prepare(feed: dict[str, np.ndarray]) -> tuple[list[dict[str, np.ndarray]], list[None]]:
        fitted = buckets.fit(feed, static_seq_len, names[0], np.int64, side) if static_seq_len else feed
        return [fitted], [None]

    def finish(feed: dict[str, np.ndarray], outputs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        width = feed["input_ids"].shape[1]
        return {n: named_output(n, buckets.cut(v, width, side) if static_seq_len else v) for n, v in outputs[0].items()}

    return {
        path_name(model): KernelPath(description(model, "ExecuTorch (XNNPACK)"), Arm64Runner(batch, path_name(model), model, make_job, prepare, finish), texts=arm64.texts())
        for model in ARM64_CPUS
    }


def path_name(cpu: str) -> str:
    return f"arm64-{cpu}"


def description(cpu: str, runtime: str) -> str:
    return f"{runtime}'s aarch64 build under qemu {arm64.emulator_version()} -cpu {cpu}: {arm64.CPU_MODELS[cpu]}"


def record(paths: dict[str, KernelPath], unchecked: str | None) -> dict[str, Any] | None:
    """The manifest's `parity.arm64`: why the ARM64 kernels were not checked, or the emulator, CPU models, texts and
    each emulated child's seconds and CPU features; None for an artifact without CPU-dependent integer kernels."""
    if unchecked is not None:
        return not_checked(unchecked)
    ran = {name: path for name, path in paths.items() if isinstance(path.runner, Arm64Runner)}
    if not ran:
        return None
    children = {name: path.runner.batch.meta.get(path.runner.name, {}) for name, path in ran.items()}  # type: ignore[union-attr]
    return {"checked": True, "emulator": f"qemu-aarch64 {arm64.emulator_version()}", "cpus": list(ARM64_CPUS),
            "texts_per_check": arm64.texts(), "paths": children}  # fmt: skip
