"""One weight shard for several tfjs graph models (one per sequence-length bucket).

tensorflowjs_converter writes each graph with its own weights. The buckets' graphs hold the same model weights
under the same names; what differs is small shape-dependent constants (reshape targets, position-embedding slices)
that may share a name across buckets with other values. `merge` keeps one copy of every weight whose name and
bytes agree, renames the others per bucket (`<name>/seq_<n>`, in the graph too) as well as any weight named like a
node another graph computes, and writes one shard that every bucket's `model.json` lists. Why not one graph with a free sequence axis: on all-MiniLM-L6-v2 in Node (wasm) it
ran 20-40 % slower at 16 tokens than the static graph (its Dense layers become dynamic Tensordot reshapes; an
indicative run on a shared machine, 60 alternating calls each: median 97 vs 80 ms, fastest 50 vs 36 ms).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

BYTES = {"float32": 4, "int32": 4, "float16": 2, "uint8": 1, "uint16": 2, "bool": 1, "int8": 1, "int16": 2}
SHARD = "group1-shard1of1.bin"


def model_file(seq_len: int, longest: int) -> str:
    """The longest bucket's graph is `model.json` (what an app unaware of buckets loads); the others `model-<n>.json`."""
    return "model.json" if seq_len == longest else f"model-{seq_len}.json"


def _weights(directory: Path) -> tuple[dict[str, Any], list[tuple[dict[str, Any], bytes]]]:
    """A converted graph's model.json and its (weight spec, bytes) in shard order."""
    model_json = json.loads((directory / "model.json").read_text())
    out = []
    for group in model_json["weightsManifest"]:
        data = b"".join((directory / p).read_bytes() for p in group["paths"])
        offset = 0
        for spec in group["weights"]:
            dtype = (spec.get("quantization") or {}).get("dtype", spec["dtype"])
            if dtype not in BYTES:
                raise SystemExit(f"weight {spec['name']} has dtype {dtype}, which the bucket merge does not handle")
            size = int(np.prod(spec["shape"], dtype=np.int64)) * BYTES[dtype]
            out.append((spec, data[offset : offset + size]))
            offset += size
        if offset != len(data):
            raise SystemExit(f"{directory}: weight specs cover {offset} of {len(data)} shard bytes")
    return model_json, out


def _rename(topology: dict[str, Any], renames: dict[str, str]) -> None:
    """Rename graph nodes (and every reference to them: `name`, `name:1`, `^name`)."""

    def renamed(ref: str) -> str:
        control = ref.startswith("^")
        base, sep, port = ref.lstrip("^").partition(":")
        return ("^" if control else "") + renames.get(base, base) + sep + port

    for node in topology.get("node", []):
        node["name"] = renames.get(node["name"], node["name"])
        node["input"] = [renamed(r) for r in node.get("input", [])]


def _computed_nodes(model_jsons: Any) -> set[str]:
    """Names of the nodes some graph computes (not a Const): a weight of another graph under such a name would, in the
    shared manifest every graph lists, shadow that node (tfjs then finds the node's inputs "unreachable"). Shape-
    dependent constants do this: the converter folds a 16-token relative-position bias into a weight that the
    128-token graph computes under the same name."""
    return {n["name"] for m in model_jsons for n in m["modelTopology"].get("node", []) if n.get("op") != "Const"}


def merge(converted: dict[int, Path], out_dir: Path) -> dict[str, Any]:
    """Write one `model*.json` per bucket ({seq_len: converted dir}) and one shard into `out_dir`; a summary."""
    longest = max(converted)
    union: dict[str, tuple[dict[str, Any], bytes]] = {}
    graphs: dict[int, dict[str, Any]] = {}
    renamed = 0
    loaded = {n: _weights(d) for n, d in converted.items()}
    computed = _computed_nodes(m for m, _ in loaded.values())
    for seq_len in sorted(converted, reverse=True):  # the longest first: it keeps the plain names
        model_json, weights = loaded[seq_len]
        renames = {}
        for spec, data in weights:
            name = spec["name"]
            if name in computed or (name in union and (union[name][1] != data or union[name][0] != spec)):
                renames[name] = f"{name}/seq_{seq_len}"
            if renames.get(name, name) not in union:
                union[renames.get(name, name)] = ({**spec, "name": renames.get(name, name)}, data)
        _rename(model_json["modelTopology"], renames)
        renamed += len(renames)
        graphs[seq_len] = model_json
    specs = [spec for spec, _ in union.values()]
    (out_dir / SHARD).write_bytes(b"".join(data for _, data in union.values()))
    files = []
    for seq_len, model_json in sorted(graphs.items()):
        model_json["weightsManifest"] = [{"paths": [SHARD], "weights": specs}]
        name = model_file(seq_len, longest)
        (out_dir / name).write_text(json.dumps(model_json))
        files.append(name)
    per_graph = {n: sum(len(d) for _, d in weights) for n, (_, weights) in loaded.items()}
    return {
        "model_files": files,
        "weight_shards": [SHARD],
        "bucket_bytes": {
            "shard": (out_dir / SHARD).stat().st_size,
            "one_graph_alone": per_graph[longest],
            "renamed_per_bucket_weights": renamed,
        },
    }
