"""Which CPU this is, in the terms that decide int8 arithmetic: recorded beside every parity check and benchmark.

int8 kernels differ by instruction set: x86 with AVX-512 VNNI or AVX-VNNI multiplies u8 x s8 exactly in 32 bits,
x86 with AVX2 (or AVX-512) but no VNNI goes through a saturating int16 step in onnxruntime, ARM64 uses
`sdot`/`udot` or widening multiplies. A number measured on one of them says nothing certain about the others.
"""

from __future__ import annotations

import platform
from functools import lru_cache
from pathlib import Path
from typing import Any

# The instruction-set flags (as /proc/cpuinfo names them) that select int8 and float kernels.
ISA_FLAGS = ("sse4_1", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "asimd", "asimddp", "i8mm", "sve")


@lru_cache(maxsize=1)
def cpu_info() -> dict[str, Any]:
    """Model name, architecture, the ISA flags above that this CPU has, and its int8 dot-product kind."""
    fields = _proc_cpuinfo()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    isa = [f for f in ISA_FLAGS if f in flags]
    machine = platform.machine()
    model = fields.get("model name") or fields.get("Model") or platform.processor() or "unknown"
    return {"model": model.strip(), "machine": machine, "isa": isa, "int8_dot_product": int8_dot_product(machine, set(isa))}


def int8_dot_product(machine: str, isa: set[str]) -> str:
    """How onnxruntime multiplies u8 x s8 here: 'vnni' (exact), 'saturating-int16' (no VNNI), 'arm64', or 'other'."""
    if machine.lower() in ("x86_64", "amd64", "i686", "x86"):
        if isa & {"avx512_vnni", "avx_vnni"}:
            return "vnni"
        if isa & {"avx2", "avx512bw"}:
            return "saturating-int16"
        return "other"
    if machine.lower() in ("aarch64", "arm64"):
        return "arm64"
    return "other"


def describe() -> str:
    """One line for reports: 'Intel(R) Xeon(R) ... (x86_64; avx2 avx512_vnni ...)'."""
    info = cpu_info()
    return f"{info['model']} ({info['machine']}; {' '.join(info['isa']) or 'no listed ISA flags'})"


def _proc_cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (Linux); empty elsewhere."""
    path = Path("/proc/cpuinfo")
    fields: dict[str, str] = {}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cores() -> int:
    """The cores this process may run on (its affinity; at least 1): how many single-threaded checks run at once."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
