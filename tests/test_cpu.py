"""edgebert.cpu: the CPU facts recorded beside parity checks and benchmarks."""

from __future__ import annotations

import pytest

from edgebert.cpu import ISA_FLAGS, cpu_info, describe, int8_dot_product


@pytest.mark.parametrize(
    ("machine", "isa", "kind"),
    [
        ("x86_64", {"avx2", "avx512f", "avx512bw", "avx512_vnni"}, "vnni"),  # Intel Ice Lake and later Xeons
        ("x86_64", {"avx2", "avx_vnni"}, "vnni"),  # Alder Lake
        ("x86_64", {"avx2", "fma"}, "saturating-int16"),  # AMD Zen 1-3
        ("x86_64", {"avx2", "avx512f", "avx512bw"}, "saturating-int16"),  # Skylake-X: AVX-512 but no VNNI
        ("aarch64", {"asimd", "asimddp"}, "arm64"),
        ("x86_64", {"sse4_1"}, "other"),
    ],
)
def test_int8_dot_product_kind(machine: str, isa: set[str], kind: str) -> None:
    assert int8_dot_product(machine, isa) == kind


def test_this_cpu_is_described() -> None:
    info = cpu_info()
    assert info["model"] and info["machine"]
    assert set(info["isa"]) <= set(ISA_FLAGS)
    assert info["model"] in describe()
