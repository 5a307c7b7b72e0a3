"""ONNX files against each other, as onnxruntime runs them with default session options (one thread, seq 128).

    python benchmarks/suites/onnx_call_compare.py [--profile] LABEL=model.onnx ...

Interleaved calls (A B C A B C ...) on one token sequence of real-looking ids, median ms per file, the largest
difference of each file's sentence embedding from the first file's; `--profile` adds onnxruntime's per-op-type
kernel time of each file (what its load-time fusions turned the graph into). The machine should be idle.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time

import numpy as np


def _session(path: str, profile_dir: str | None = None):  # noqa: ANN202 - onnxruntime type
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if profile_dir:
        options.enable_profiling = True
        options.profile_file_prefix = f"{profile_dir}/ort"
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _feeds(session, seq_len: int) -> dict[str, np.ndarray]:  # noqa: ANN001
    ids = np.random.default_rng(0).integers(1000, 20000, (1, seq_len)).astype(np.int64)
    ids[0, 0], ids[0, -1] = 101, 102
    values = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    return {i.name: values[i.name] for i in session.get_inputs()}


def _op_times(path: str, seq_len: int, calls: int = 50) -> list[tuple[str, int, float]]:
    """(op type, nodes, ms per call) of the kernels onnxruntime ran, slowest first."""
    with tempfile.TemporaryDirectory() as tmp:
        session = _session(path, tmp)
        feeds = _feeds(session, seq_len)
        for _ in range(calls):
            session.run(None, feeds)
        events = json.load(open(session.end_profiling()))
    total, nodes = collections.Counter(), collections.defaultdict(set)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            total[e["args"]["op_name"]] += e["dur"]
            nodes[e["args"]["op_name"]].add(e["name"])
    return [(op, len(nodes[op]), us / calls / 1000) for op, us in total.most_common()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="LABEL=PATH")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    labels, paths = zip(*(f.split("=", 1) for f in args.files))
    sessions = [_session(p) for p in paths]
    feeds = [_feeds(s, args.seq_len) for s in sessions]
    first = [s.run(None, f)[0] for s, f in zip(sessions, feeds)]
    times: list[list[float]] = [[] for _ in sessions]
    for repeat in range(args.calls + 5):
        for i, (s, f) in enumerate(zip(sessions, feeds)):
            start = time.perf_counter()
            s.run(None, f)
            if repeat >= 5:
                times[i].append(time.perf_counter() - start)
    print(f"| file | ms median (seq {args.seq_len}, 1 thread) | max abs diff of the sentence embedding vs {labels[0]} |")
    print("|---|---|---|")
    for label, t, out in zip(labels, times, first):
        print(f"| {label} | {np.median(t) * 1000:.3f} | {float(np.abs(out - first[0]).max()):.1e} |")
    if args.profile:
        for label, path in zip(labels, paths):
            top = ", ".join(f"{op} x{n} {ms:.3f}" for op, n, ms in _op_times(path, args.seq_len)[:6])
            print(f"\n{label}: {top} (ms per call, profiled)")


if __name__ == "__main__":
    main()
