"""What a run of edgebert costs: wall and CPU seconds per named phase (capture, conversion, each island rung, the
reference outputs, each kernel path's parity), recorded while a `recording()` block is open and written into the
export manifest's `metrics.phases`; `benchmarks/suites/export_cost.py` tabulates them.

CPU seconds are this process's (every thread) plus those of its children once they have exited (the TensorFlow
conversion processes, the Node runners): on a shared machine they say what the work cost where wall time cannot.
Phases nest ("verify / parity: host"); a phase opened with no recording open costs two clock reads.
"""

from __future__ import annotations

import contextlib
import resource
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

_RECORDS: ContextVar[list[dict[str, Any]] | None] = ContextVar("edgebert_cost_records", default=None)
_PATH: ContextVar[tuple[str, ...]] = ContextVar("edgebert_cost_path", default=())
SEPARATOR = " / "


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (all threads) and of its children that have exited."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """Collect the phases opened inside the block: a list of {"phase", "wall_s", "cpu_s"}, in the order they end."""
    records: list[dict[str, Any]] = []
    token = _RECORDS.set(records)
    try:
        yield records
    finally:
        _RECORDS.reset(token)


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as `name`, nested under the phases open around it."""
    records = _RECORDS.get()
    if records is None:
        yield
        return
    path = (*_PATH.get(), name)
    token = _PATH.set(path)
    wall, cpu = time.perf_counter(), cpu_seconds()
    try:
        yield
    finally:
        _PATH.reset(token)
        records.append({
            "phase": SEPARATOR.join(path),
            "wall_s": round(time.perf_counter() - wall, 2),
            "cpu_s": round(cpu_seconds() - cpu, 2),
        })  # fmt: skip


def adopt(records: list[dict[str, Any]]) -> None:
    """Add phases recorded elsewhere (a worker process's, `edgebert.targets.tf_subprocess`) under the phases open here."""
    own = _RECORDS.get()
    if own is None:
        return
    prefix = SEPARATOR.join(_PATH.get())
    own.extend({**r, "phase": f"{prefix}{SEPARATOR}{r['phase']}" if prefix else r["phase"]} for r in records)

