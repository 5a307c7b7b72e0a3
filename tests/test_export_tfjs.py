"""The TF.js target: conversion in a TensorFlow subprocess, one weight shard, int32 [1, T] inputs, Node runner."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from edgebert.errors import TargetUnavailable
from edgebert.families import BERT
from edgebert.targets.tfjs import exporter as tfjs
from edgebert.targets.base import ExportOptions

SEQ_LEN = 32
QUANTIZATIONS = ("none", "uint8", "float16")


def _require_toolchain() -> None:
    """The toolchain is part of the project install (./install.sh): a missing one fails, it is not skipped."""
    tfjs.TFJSExporter().check_available()


@pytest.fixture(scope="module")
def tiny_exports(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """tiny_bert exported once per quantization (lazily), shared by this module's tests."""
    from edgebert.export import export

    _require_toolchain()
    root = tmp_path_factory.mktemp("tfjs")
    cache: dict = {}

    def get(quantize: str):
        if quantize not in cache:
            out = root / f"tiny-{quantize}"
            # Per-head attention (the long buckets' form; batched short buckets: test_buckets.py).
            options = {"quantize": quantize, "seq_len": SEQ_LEN, "tfjs_batched_attention_max_len": 0, "quiet": True}
            cache[quantize] = export("tfjs", model=tiny_bert, out=out, **options)
        return cache[quantize]

    return SimpleNamespace(get=get)


@pytest.mark.parametrize("quantize", QUANTIZATIONS)
def test_export_writes_one_shard_int32_static_and_passes_parity(tiny_exports, quantize: str) -> None:
    report = tiny_exports.get(quantize)
    out, manifest = report.out_dir, report.manifest
    model_json = json.loads((out / "model.json").read_text())
    shards = [p for group in model_json["weightsManifest"] for p in group["paths"]]
    assert len(shards) == 1 and (out / shards[0]).is_file()
    assert sorted(manifest["files"]) == sorted(["model.json", *shards])
    assert manifest["target_details"]["weight_shards"] == shards
    assert manifest["static_shape"] is True
    assert [i["name"] for i in manifest["inputs"]] == BERT.input_names()
    for spec in manifest["inputs"]:
        assert spec["dtype"] == "int32" and spec["shape"] == [1, SEQ_LEN]
    assert manifest["quantization"] == quantize
    assert manifest["parity"]["passed"] is True
    assert manifest["parity"]["min_cosine"] >= manifest["parity"]["threshold"]
    assert (out / "tokenizer.json").exists() or (out / "vocab.txt").exists()


@pytest.mark.parametrize("quantize", QUANTIZATIONS)
def test_graph_inputs_and_output_nodes_are_recorded(tiny_exports, quantize: str) -> None:
    report = tiny_exports.get(quantize)
    model_json = json.loads((report.out_dir / "model.json").read_text())
    details = report.manifest["target_details"]
    outputs = model_json["signature"]["outputs"]
    for key in ("sentence_embedding", "last_hidden_state"):
        assert details["output_nodes"][key] == outputs[key]["name"]
    placeholders = {n["name"]: n for n in model_json["modelTopology"]["node"] if n["op"] == "Placeholder"}
    assert set(placeholders) == set(BERT.input_names())
    for node in placeholders.values():
        assert node["attr"]["dtype"]["type"] == "DT_INT32"
        assert [int(d["size"]) for d in node["attr"]["shape"]["shape"]["dim"]] == [1, SEQ_LEN]
    ops = {n["op"] for n in model_json["modelTopology"]["node"]}
    assert "Erfc" not in ops and not any(op.startswith("_Mkl") for op in ops)
    assert "GatherNd" in ops and "GatherV2" not in ops  # embedding rows looked up whole (tf_ops.embedding)
    assert report.manifest["target_details"]["embedding_lookup"] == "gather_nd"


def graph_products(model_json: dict) -> dict[str, list[dict]]:
    """A tfjs graph's matrix products by form: `dense` (activations times a weight constant), `pairwise_2d` (two
    computed tensors, a plain 2-D MatMul: a per-head attention product) and `pairwise_batched` (two computed
    tensors with batch axes: BatchMatMulV2, the attention products of transformers' own code)."""
    nodes = model_json["modelTopology"]["node"]
    consts = {n["name"] for n in nodes if n["op"] == "Const"}
    out: dict[str, list[dict]] = {"dense": [], "pairwise_2d": [], "pairwise_batched": []}
    for node in (n for n in nodes if "MatMul" in n["op"]):
        form = "dense" if any(i in consts for i in node["input"]) else "pairwise_2d" if node["op"] == "MatMul" else "pairwise_batched"
        out[form].append(node)
    return out


def test_attention_is_one_plain_2d_product_per_head(tiny_exports, tiny_bert: Path) -> None:
    """tfjs' wasm backend runs batched or transpose_b products of two computed tensors on a slow generic kernel: none
    may remain. Dense layers are one product broadcast over the batch axis of 1 (no Tensordot reshapes around it)."""
    from transformers import AutoConfig

    report = tiny_exports.get("none")
    model_json = json.loads((report.out_dir / "model.json").read_text())
    products = graph_products(model_json)
    config = AutoConfig.from_pretrained(tiny_bert)
    dense_per_layer = 6  # query, key, value, attention output, FFN in, FFN out
    assert len(products["dense"]) == config.num_hidden_layers * dense_per_layer
    assert {n["op"] for n in products["dense"]} == {"BatchMatMulV2"}
    assert not any("Tensordot" in n["name"] for n in model_json["modelTopology"]["node"])
    assert len(products["pairwise_2d"]) == config.num_hidden_layers * 2 * config.num_attention_heads  # scores, context
    assert not products["pairwise_batched"]
    # Each head's matrices by GatherNd: the wasm backend's Unpack / Slice / Split copy their whole input per output.
    ops = {n["op"] for n in model_json["modelTopology"]["node"]}
    assert not ops & {"Unpack", "Slice", "Split", "SplitV"}
    flags = ("transpose_a", "transpose_b", "adj_x", "adj_y")
    assert not any(n.get("attr", {}).get(k, {}).get("b") for form in products.values() for n in form for k in flags)
    assert report.manifest["target_details"]["attention_products"] == "per_head_2d"
    assert report.manifest["target_details"]["dense_products"] == "broadcast_matmul"
    assert [b["attention"] for b in report.manifest["buckets"]] == ["per-head"]


def test_attention_per_bucket_follows_the_threshold() -> None:
    assert tfjs.attention_per_bucket((16, 32, 64, 128), 32) == {"16": "batched", "32": "batched", "64": "per-head", "128": "per-head"}
    assert set(tfjs.attention_per_bucket((16, 128), 0).values()) == {"per-head"}


def test_uint8_keeps_ffn_down_projections_vectors_and_folded_constants_in_float16(tiny_exports) -> None:
    report = tiny_exports.get("uint8")
    model_json = json.loads((report.out_dir / "model.json").read_text())
    stored = {
        w["name"]: (w.get("quantization") or {}).get("dtype", w["dtype"])
        for group in model_json["weightsManifest"]
        for w in group["weights"]
    }
    kernels = {n: d for n, d in stored.items() if n.endswith(".weight/Read/ReadVariableOp") and "dense" in n}
    ffn_down = {n: d for n, d in kernels.items() if ".output.dense." in n and ".attention." not in n}
    assert len(ffn_down) == 2 and set(ffn_down.values()) == {"float16"}  # one per layer of tiny_bert
    assert {d for n, d in kernels.items() if n not in ffn_down} == {"uint8"}
    vectors = {n: d for n, d in stored.items() if n.endswith((".bias/Read/ReadVariableOp", "LayerNorm.weight/Read/ReadVariableOp"))}
    assert len(vectors) >= 20 and set(vectors.values()) == {"float16"}  # biases and norm scales: 1-D, a few bytes
    assert stored[next(n for n in stored if "word_embeddings" in n)] == "uint8"
    folded = {n: d for n, d in stored.items() if "/static/" in n}  # the position rows, folded from a constant lookup
    assert folded and set(folded.values()) == {"float16"}
    details = report.manifest["target_details"]
    assert details["weight_dtypes"].get("uint8", 0) > 0 and "float32" not in details["weight_dtypes"]
    assert details["quantization"]["float_islands"] == ["ffn_output"] and details["quantization"]["guard"]["min_cosine"] >= 0.9925
    assert tiny_exports.get("float16").manifest["target_details"]["weight_dtypes"].get("uint8") is None


def test_quantize_flags_patterns_skip_attention_output() -> None:
    import fnmatch

    from edgebert.targets.tfjs.convert import quantize_flags

    assert quantize_flags("none") == []
    assert quantize_flags("float16") == ["--quantize_float16", "*"]
    assert quantize_flags("uint8") == ["--quantize_uint8", "*"]
    flags = quantize_flags("uint8", tfjs.keep_float16_patterns(BERT))
    assert flags[-1] == "--quantize_uint8"  # bare: the fallthrough for everything else
    patterns = flags[1].split(",")
    base = "StatefulPartitionedCall/w/encoder.encoder.layer.{}.{}.weight/Read/ReadVariableOp"
    hits = lambda name: any(fnmatch.fnmatch(name, p) for p in patterns)  # noqa: E731
    assert hits(base.format(3, "output.dense")) and hits(base.format(11, "output.dense"))
    assert hits(base.replace("encoder.encoder", "model.bert.encoder").format(0, "output.dense"))  # a task model
    assert not hits(base.format(3, "attention.output.dense")) and not hits(base.format(3, "intermediate.dense"))


def test_quantized_weights_are_smaller(tiny_exports) -> None:
    sizes = {q: tiny_exports.get(q).manifest["files"] for q in QUANTIZATIONS}
    shard = {q: sum(v for k, v in files.items() if k.endswith(".bin")) for q, files in sizes.items()}
    assert shard["uint8"] < shard["float16"] < shard["none"]


def test_runner_matches_reference_and_times_in_node(tiny_exports, tiny_bert: Path) -> None:
    from edgebert.modelio import load_model
    from edgebert.parity import compare, encode, torch_reference

    report = tiny_exports.get("none")
    runner = tfjs.TFJSExporter().load_runner(report.out_dir, report.manifest)
    loaded = load_model(tiny_bert)
    inputs = encode(loaded.tokenizer, ["hello world", "the quick brown fox"], SEQ_LEN, pad_to_seq_len=True)
    got = runner.run(inputs)
    assert got["sentence_embedding"].shape == (2, 32) and got["sentence_embedding"].dtype == np.float32
    assert got["last_hidden_state"].shape == (2, SEQ_LEN, 32)
    assert runner.last_backend in ("wasm", "cpu")
    parity = compare(torch_reference(loaded.embedder, inputs), got, inputs["attention_mask"], 0.9999)
    assert parity.passed, parity

    one = {k: v[:1] for k, v in inputs.items()}
    times = runner.time_calls(one, warmup=1, repeats=4)
    assert len(times) == 4 and all(isinstance(t, float) and t > 0 for t in times)
    runner.close()


def test_runner_pads_shorter_inputs_and_rejects_longer_ones(tiny_exports) -> None:
    report = tiny_exports.get("none")
    runner = tfjs.TFJSExporter().load_runner(report.out_dir, report.manifest)
    try:
        short = {name: np.ones((1, SEQ_LEN - 1), dtype=np.int64) for name in BERT.input_names()}
        assert runner.run(short)["last_hidden_state"].shape == (1, SEQ_LEN - 1, 32)  # padded to SEQ_LEN, cut back
        long = {name: np.ones((1, SEQ_LEN + 1), dtype=np.int64) for name in BERT.input_names()}
        with pytest.raises(ValueError, match=f"takes at most {SEQ_LEN}"):
            runner.run(long)
    finally:
        runner.close()


def test_missing_node_is_a_clear_target_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDGEBERT_NODE", raising=False)
    monkeypatch.setattr(tfjs.shutil, "which", lambda name: None)
    with pytest.raises(TargetUnavailable, match="node"):
        tfjs.find_node()


def test_missing_node_modules_says_to_run_npm_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tfjs, "JS_DIR", tmp_path)
    with pytest.raises(TargetUnavailable, match="npm ci --prefix"):
        tfjs.check_js_packages()


def test_conversion_failure_surfaces_stderr_as_target_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing TensorFlow child: one TargetUnavailable naming the step and the child's last error line."""
    _require_toolchain()
    monkeypatch.setattr(tfjs, "capture_model", lambda model, lengths, graph_dir, target: {"ops": []})  # an empty graph dir
    bogus = SimpleNamespace(family=BERT, output_names=("sentence_embedding", "last_hidden_state"))
    with pytest.raises(TargetUnavailable, match="conversion failed") as info:
        tfjs.TFJSExporter().convert(bogus, tmp_path / "out", ExportOptions(seq_len=8))
    assert "graph.json" in str(info.value)


# --- integration: the packaged all-MiniLM-L6-v2 teacher at the default length -------------------------------------


@pytest.mark.integration  # uint8, the recipe with a ladder (fp32: CI's main job, README's `export --target tfjs`)
@pytest.mark.parametrize("quantize", ["uint8"])
def test_teacher_export_passes_default_parity(
    packaged_teacher: Path, tmp_path: Path, quantize: str
) -> None:
    from edgebert.export import export
    from edgebert.parity import default_min_cosine

    _require_toolchain()
    report = export("tfjs", model=None, out=tmp_path / f"teacher-{quantize}", quantize=quantize, quiet=True)
    parity = report.manifest["parity"]
    assert parity["threshold"] == default_min_cosine(quantize)
    assert parity["passed"] is True, parity
    assert len(report.manifest["target_details"]["weight_shards"]) == 1
    assert report.manifest["inputs"][0]["shape"] == [1, 128]


def test_uint8_keeps_the_ffn_up_projections_float16_when_the_guard_needs_them(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One weight 1000 times the largest in every FFN up-projection (and the FFN's output made to dominate the
    residual): one uint8 scale per tensor then rounds the rest of it to zero, the guard texts drift, and the next set
    of islands (FFN up-projections too) is kept. The sets are converted one at a time from one SavedModel, the next
    only when the guard needs it (two of the three here), and the first set's conversion is not left behind."""
    import shutil

    from safetensors.torch import load_file, save_file

    from edgebert.export import export
    from edgebert.targets.tfjs import exporter as tfjs_exporter

    calls: list[tuple[dict, dict]] = []
    real_run_tf = tfjs_exporter.run_tf

    def spy(module: str, spec: dict, *args: object) -> dict:
        result = real_run_tf(module, spec, *args)
        calls.append((spec, dict(result)))
        return result

    monkeypatch.setattr(tfjs_exporter, "run_tf", spy)

    _require_toolchain()
    model = tmp_path / "outliers"
    shutil.copytree(tiny_bert, model)
    weights = load_file(model / "model.safetensors")
    for key in [k for k in weights if k.endswith("intermediate.dense.weight")]:
        w = weights[key].clone()
        w[0, 0] = 1000 * w.abs().max()
        weights[key] = w
        down = key.replace("intermediate.dense", "output.dense")
        weights[down] = weights[down] * 20
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    report = export("tfjs", model=model, out=tmp_path / "out", quantize="uint8", seq_len=SEQ_LEN, quiet=True)
    details = report.manifest["target_details"]
    assert details["quantization"]["float_islands"] == ["ffn_output", "ffn_input"] and report.manifest["parity"]["passed"]
    stored = {w["name"]: (w.get("quantization") or {}).get("dtype", w["dtype"]) for group in
              json.loads((report.out_dir / "model.json").read_text())["weightsManifest"] for w in group["weights"]}  # fmt: skip
    assert {d for n, d in stored.items() if "intermediate.dense.weight" in n} == {"float16"}
    assert [p.name for p in report.out_dir.iterdir() if p.is_dir()] == []
    assert [spec["rung"] for spec, _ in calls] == [0, 1] and len({spec["saved_model_dir"] for spec, _ in calls}) == 1
    assert "attention_products" in calls[0][1] and "attention_products" not in calls[1][1]  # built by the first call only
