"""Sequence-length buckets: one TFLite file with a signature per bucket sharing the weights, one TF.js graph
per bucket over one weight shard; parity on every bucket, runners pad only to the smallest bucket that fits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebert import buckets
from edgebert.bench.app_latency import schedule
from edgebert.errors import UserError
from edgebert.parity import PARITY_SENTENCES, encode, torch_reference
from test_export_tfjs import graph_products

BUCKETS = [16, 32]
CALIBRATION = ["a man is eating food", "the cat sat on the mat.", "prices rose 3% on monday", "hello there, friend!"]



def test_fit_pads_with_zeros_on_the_right_in_the_runtime_dtype() -> None:
    inputs = {"input_ids": np.array([[101, 7, 102], [101, 102, 0]], dtype=np.int64), "attention_mask": np.array([[1, 1, 1], [1, 1, 0]])}
    feeds = buckets.fit(inputs, 5, ["input_ids", "attention_mask", "token_type_ids"])
    assert {k: v.dtype for k, v in feeds.items()} == dict.fromkeys(feeds, np.int32)
    assert feeds["input_ids"].tolist() == [[101, 7, 102, 0, 0], [101, 102, 0, 0, 0]]
    assert feeds["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]]
    assert not feeds["token_type_ids"].any() and feeds["token_type_ids"].shape == (2, 5)
    assert buckets.pad(inputs["input_ids"], 3).dtype == np.int64  # its own dtype by default; a copy
    assert buckets.pad(inputs["input_ids"], 3) is not inputs["input_ids"]


def test_a_left_padding_tokenizer_is_padded_and_cut_on_the_left() -> None:
    """XLNet pads first (its classifier reads the last token): runners pad and cut per-token outputs on that side."""
    feeds = buckets.fit({"input_ids": np.array([[5, 7, 3, 2]])}, 6, ["input_ids", "attention_mask"], side="left")
    assert feeds["input_ids"].tolist() == [[0, 0, 5, 7, 3, 2]] and feeds["attention_mask"].shape == (1, 6)
    hidden = np.arange(12, dtype=np.float32).reshape(1, 6, 2)
    assert buckets.cut(hidden, 4, "left").tolist() == hidden[:, 2:].tolist()
    assert buckets.cut(hidden, 4).tolist() == hidden[:, :4].tolist()
    assert buckets.padding_side({"model": {"padding_side": "left"}}) == "left" and buckets.padding_side({}) == "right"

def test_normalize_and_pick() -> None:
    assert buckets.normalize(128) == (128,)
    assert buckets.normalize([64, 16, 32, 16]) == (16, 32, 64)
    for bad in ([], [16, 1], "16,32", ["16"], 2.5, [True]):
        with pytest.raises(UserError, match="--seq-len"):
            buckets.normalize(bad)
    assert [buckets.pick(n, (16, 32, 64)) for n in (1, 16, 17, 64)] == [16, 16, 32, 64]
    with pytest.raises(ValueError, match="takes at most 64"):
        buckets.pick(65, (16, 32, 64))
    assert "smallest bucket >= the token count" in buckets.how_to_pick([16, 32])


def test_default_buckets_below_the_longest_length() -> None:
    from edgebert.config import DEFAULT_BUCKETS

    assert buckets.lengths(128, False) == (128,)
    assert buckets.lengths(128, True) == DEFAULT_BUCKETS == (12, 16, 32, 64, 128)
    assert buckets.lengths(40, True) == (12, 16, 32, 40)
    assert buckets.lengths(256, True) == (12, 16, 32, 64, 128, 256)
    assert buckets.lengths(12, True) == (12,)
    with pytest.raises(UserError, match="--buckets adds the default lengths"):
        buckets.lengths([16, 32], True)


def test_cli_buckets_with_a_list_is_one_line_and_exit_2(tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from edgebert.cli import main

    assert main(["export", "--target", "tflite", "--model", str(tiny_bert), "--out", str(tmp_path / "x"),
                 "--seq-len", "16,32", "--buckets"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--buckets adds the default lengths" in err[0]
    assert not (tmp_path / "x").exists()


def test_tflite_export_with_default_buckets(tiny_bert: Path, tmp_path: Path) -> None:
    pytest.importorskip("litert_torch")
    from edgebert.export import export

    report = export("tflite", model=tiny_bert, out=tmp_path / "b", seq_len=32, buckets=True, quiet=True)
    assert [b["seq_len"] for b in report.manifest["buckets"]] == [12, 16, 32]
    parity = report.manifest["parity"]
    assert parity["passed"] and all({"bucket_12", "bucket_16"} <= set(p) for p in parity["kernel_paths"].values())


def test_export_refuses_bad_buckets(tiny_bert: Path, tmp_path: Path) -> None:
    from edgebert.export import export

    with pytest.raises(UserError, match="--seq-len"):
        export("tflite", model=tiny_bert, out=tmp_path / "x", seq_len=[16, 0], quiet=True)
    assert not (tmp_path / "x").exists()


def _reference(model_dir: Path, text: str) -> tuple[dict, dict]:
    """One sentence at its natural length (as an app tokenizes it) and its PyTorch outputs."""
    from edgebert.modelio import load_model

    loaded = load_model(model_dir)
    inputs = encode(loaded.tokenizer, [text], 32, pad_to_seq_len=False)
    return inputs, torch_reference(loaded.embedder, inputs)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b)))


def _check_manifest_and_parity(manifest: dict, kernel_paths: set[str]) -> None:
    assert [b["seq_len"] for b in manifest["buckets"]] == BUCKETS
    assert manifest["seq_len"] == max(BUCKETS) and manifest["recipe"]["seq_len"] == BUCKETS
    assert all(i["shape"] == [1, "bucket"] for i in manifest["inputs"])
    assert manifest["files"] and all(size > 0 for size in manifest["files"].values())
    parity = manifest["parity"]
    assert parity["passed"] and set(parity["kernel_paths"]) == kernel_paths
    for path in parity["kernel_paths"].values():  # every bucket's graph ran every parity sentence
        for n in BUCKETS:
            check = path[f"bucket_{n}"]
            assert check["seq_len"] == n and check["sentences"] == len(PARITY_SENTENCES)
            assert check["min_cosine"] >= parity["threshold"]


def _buffer_bytes(path: Path) -> int:
    from ai_edge_litert.tools import flatbuffer_utils

    tree = flatbuffer_utils.read_model(str(path))
    return sum(len(b.data) if b.data is not None else int(b.size or 0) for b in tree.buffers)


@pytest.fixture(scope="module")
def tflite_exports(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("litert_torch")
    from edgebert.export import export

    base = tmp_path_factory.mktemp("buckets-tflite")
    return {
        "none": export("tflite", model=tiny_bert, out=base / "fp32", seq_len=BUCKETS, quiet=True),
        "int8-static": export(
            "tflite", model=tiny_bert, out=base / "static", seq_len=BUCKETS, quantize="int8-static",
            calibration_texts=CALIBRATION, quiet=True,
        ),
    }  # fmt: skip


@pytest.mark.parametrize("quantize", ["none", "int8-static"])
def test_tflite_one_signature_per_bucket_with_parity(tflite_exports: dict, quantize: str) -> None:
    from ai_edge_litert.interpreter import Interpreter

    report = tflite_exports[quantize]
    _check_manifest_and_parity(report.manifest, {"xnnpack", "builtin"})
    signatures = Interpreter(model_path=str(report.out_dir / "model.tflite")).get_signature_list()
    assert sorted(signatures) == sorted(b["signature"] for b in report.manifest["buckets"]) == ["seq_16", "serving_default"]


def test_tflite_buckets_share_the_weights(tflite_exports: dict, tiny_bert: Path) -> None:
    """The constant data of two buckets is one copy of the model's parameters (less the unused pooler and the
    position table, which each bucket slices to its own rows) plus those rows."""
    from safetensors.numpy import load_file

    parameter_bytes = sum(v.size * 4 for v in load_file(str(tiny_bert / "model.safetensors")).values())
    report = tflite_exports["none"]
    stored = _buffer_bytes(report.out_dir / "model.tflite")
    assert stored < 1.25 * parameter_bytes  # two copies would be ~2x
    cost = report.manifest["target_details"]["bucket_bytes"]
    assert cost["shared"] > 0.7 * parameter_bytes and cost["own:seq_16"] < 0.1 * parameter_bytes
    file_bytes = (report.out_dir / "model.tflite").stat().st_size
    assert cost["graphs"] > 0 and cost["shared"] + cost["own:seq_16"] + cost["own:serving_default"] + cost["graphs"] == file_bytes
    assert _buffer_bytes(tflite_exports["int8-static"].out_dir / "model.tflite") < stored


def test_tflite_runner_pads_only_to_the_smallest_bucket(tflite_exports: dict, tiny_bert: Path) -> None:
    from edgebert.targets import get_exporter

    report = tflite_exports["none"]
    runner = get_exporter("tflite").load_runner(report.out_dir, report.manifest)
    calls: list[int] = []
    for n, signature_runner in list(runner.runners.items()):
        runner.runners[n] = lambda _f=signature_runner, _n=n, **row: calls.append(_n) or _f(**row)
    inputs, reference = _reference(tiny_bert, "Hello world.")
    width = inputs["input_ids"].shape[1]
    assert width < 16
    outputs = runner.run(inputs)
    assert calls == [16]
    assert outputs["last_hidden_state"].shape[1] == width
    assert _cosine(outputs["sentence_embedding"][0], reference["sentence_embedding"][0]) > 0.9999
    runner.run(encode(runner_tokenizer(report.out_dir), [PARITY_SENTENCES[-1]], 20, pad_to_seq_len=False))
    assert calls == [16, 32]
    with pytest.raises(ValueError, match="takes at most 32"):
        runner.run({k: np.ones((1, 33), dtype=np.int64) for k in inputs})
    runner.close()


def runner_tokenizer(export_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(export_dir))


def test_tfjs_one_graph_per_bucket_over_one_shard(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from edgebert.export import export
    from edgebert.modelio import load_model
    from edgebert.targets import get_exporter

    # Per-bucket attention: batched up to 16 tokens, one 2-D product per head at 32; each bucket passes parity.
    report = export("tfjs", model=tiny_bert, out=tmp_path / "tfjs", seq_len=BUCKETS, tfjs_batched_attention_max_len=16, quiet=True)
    manifest = report.manifest
    _check_manifest_and_parity(manifest, {"host"})
    assert [b["model_file"] for b in manifest["buckets"]] == ["model-16.json", "model.json"]
    assert [b["attention"] for b in manifest["buckets"]] == ["batched", "per-head"]
    assert manifest["target_details"]["attention_products"] == "per_bucket"
    graphs = {b["attention"]: json.loads((report.out_dir / b["model_file"]).read_text()) for b in manifest["buckets"]}
    ops = {form: {n["op"] for n in g["modelTopology"]["node"]} for form, g in graphs.items()}
    products = {form: graph_products(g) for form, g in graphs.items()}
    assert products["batched"]["pairwise_batched"] and not products["batched"]["pairwise_2d"]
    assert products["per-head"]["pairwise_2d"] and not products["per-head"]["pairwise_batched"]
    # the per-head graph takes each head's matrices by GatherNd (tf_ops._head_matrices: two per product), never Unpack
    config = json.loads((tiny_bert / "config.json").read_text())
    gathers = {form: sum(n["op"] == "GatherNd" for n in g["modelTopology"]["node"]) for form, g in graphs.items()}
    assert gathers["per-head"] - gathers["batched"] == 2 * len(products["per-head"]["pairwise_2d"])
    assert len(products["per-head"]["pairwise_2d"]) == 2 * config["num_hidden_layers"] * config["num_attention_heads"]
    assert "Unpack" not in ops["batched"] | ops["per-head"]
    assert sorted(manifest["files"]) == ["group1-shard1of1.bin", "model-16.json", "model.json"]
    for entry in manifest["buckets"]:  # static [1, n] graphs listing the same single shard
        model_json = json.loads((report.out_dir / entry["model_file"]).read_text())
        dims = {tuple(int(d["size"]) for d in v["tensorShape"]["dim"]) for v in model_json["signature"]["inputs"].values()}
        assert dims == {(1, entry["seq_len"])}
        assert [g["paths"] for g in model_json["weightsManifest"]] == [["group1-shard1of1.bin"]]
    cost = manifest["target_details"]["bucket_bytes"]
    assert cost["shard"] == manifest["files"]["group1-shard1of1.bin"] < 1.25 * cost["one_graph_alone"]
    runner = get_exporter("tfjs").load_runner(report.out_dir, manifest)
    padded_to: list[int] = []
    fit = buckets.fit
    monkeypatch.setattr(buckets, "fit", lambda inputs, n, *a, **k: padded_to.append(n) or fit(inputs, n, *a, **k))
    try:
        inputs, reference = _reference(tiny_bert, "Hello world.")
        outputs = runner.run(inputs)
        assert padded_to == [16]
        assert outputs["last_hidden_state"].shape[1] == inputs["input_ids"].shape[1]
        assert _cosine(outputs["sentence_embedding"][0], reference["sentence_embedding"][0]) > 0.9999
        with pytest.raises(ValueError, match="takes at most 32"):
            runner.run({k: np.ones((1, 33), dtype=np.int64) for k in inputs})
        # What bench's app-like latency times for TF.js: each text tokenized in JS (the demo app's tokenizer) and run
        # in Node, fixed and bucketed; the JS ids must be Python's, truncation included.
        texts = ["Hello world.", "where is my phone charger, the white one?", " ".join(["a very long note"] * 12)]
        timed = runner.time_texts(texts, schedule(len(texts), ["fixed", "buckets"], run=2), warmup=1)
        loaded = load_model(tiny_bert)
        python_ids = [encode(loaded.tokenizer, [t], 32, pad_to_seq_len=False)["input_ids"][0].tolist() for t in texts]
        assert timed["ids"] == python_ids and len(python_ids[-1]) == 32 and "JS" in timed["tokenizer"]
        assert {buckets.pick(len(ids), BUCKETS) for ids in python_ids} == set(BUCKETS)
        for mode in ("fixed", "buckets"):
            assert all(len(timed["times"][mode][k]) == 3 and min(timed["times"][mode][k]) > 0 for k in ("tokenize_s", "model_s"))
    finally:
        runner.close()


def test_bench_times_real_lengths_fixed_and_bucketed(tflite_exports: dict, tiny_bert: Path, tmp_path: Path) -> None:
    import json

    from edgebert.bench.harness import build_config, run_bench
    from edgebert.bench.measure import MeasureJob

    texts = tmp_path / "queries.txt"
    texts.write_text("hello world\nwhere is my phone?\n" + " ".join(["a very long note about the weather"] * 4) + "\n")
    job = MeasureJob(seq_lens=[16], batches=[1], threads=[1], warmup=1, repeats=2, texts_path=str(texts), texts_limit=10)
    config = build_config([str(tiny_bert), str(tflite_exports["none"].out_dir)], job=job, isolate=False)
    run_bench(config, tmp_path / "report", echo=lambda m: None)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    torch_item, tflite_item = report["items"]
    assert tflite_item["status"] == "ok" and tflite_item["buckets"] == BUCKETS
    app = tflite_item["app_latency"]
    assert app["texts"] == 3 and app["source"] == str(texts) and app["max_length"] == 32
    assert set(app["modes"]) == {"fixed", "buckets"} and app["bucket_counts"] == {"16": 2, "32": 1}
    assert all(m["e2e_ms"]["n"] == 3 and m["e2e_ms"]["p90"] >= m["e2e_ms"]["median"] > 0 for m in app["modes"].values())
    assert app["bucket_speedup_e2e"] > 0 and app["tokenizer"].startswith("tokenizers (Rust") and "ids_differ" not in app
    middle = app["at_median_length"]  # the three texts' token counts sorted: the middle one's, alone at its length
    assert middle["texts"] == 1 and middle["bucket"] == 16 and middle["tokens"] <= 16
    assert middle["speedup_e2e"] > 0 and middle["speedup_model"] > 0 and middle["fixed_e2e_ms"] > 0
    assert set(torch_item["app_latency"]["modes"]) == {"natural"}
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## App-like latency" in md and "| buckets |" in md and "| fixed |" in md and "texts of the median length" in md


def test_app_latency_texts_are_spread_over_the_file(tmp_path: Path) -> None:
    """A file ordered by length (as STS-B is by genre) is sampled over its whole length, not its first lines."""
    from edgebert.bench.app_latency import read_texts
    from edgebert.data import evenly_spaced

    lines = [" ".join(["word"] * n) for n in range(1, 101)]
    (tmp_path / "t.txt").write_text("\n".join(lines + lines[:5] + [""]) + "\n")  # repeats and a blank line
    texts, _ = read_texts(str(tmp_path / "t.txt"), None, 10)
    assert [len(t.split()) for t in texts] == [1, 11, 21, 31, 41, 51, 61, 71, 81, 91]
    assert read_texts(str(tmp_path / "t.txt"), None, 500)[0] == lines
    assert evenly_spaced(["a", "b", "c"], 2) == ["a", "b"] and evenly_spaced([], 3) == []


def test_demo_core_picks_the_bucket_in_node(tiny_bert: Path, tmp_path: Path) -> None:
    """demo_app's TypeScript core (Node, wasm) on a bucketed TF.js export: ids, bucket and embedding per text; and the
    React Native bundle table prepare.sh generates (a require() per bucket graph) driving the same core."""
    import json
    import os
    import shutil
    import subprocess

    from test_demo_app import APP, missing_dependency

    from edgebert.export import export
    from edgebert.modelio import load_model

    if not shutil.which("node") or not (APP / "node_modules" / "tsx" / "package.json").exists():
        missing_dependency("demo_app's npm packages or Node.js are missing")
    report = export("tfjs", model=tiny_bert, out=tmp_path / "tfjs", seq_len=BUCKETS, quiet=True)
    loaded = load_model(tiny_bert)
    cases = []
    for text in ("Hello world.", "where is my phone charger?", PARITY_SENTENCES[-1]):
        inputs = encode(loaded.tokenizer, [text], max(BUCKETS), pad_to_seq_len=False)
        embedding = torch_reference(loaded.embedder, inputs)["sentence_embedding"][0]
        width = inputs["input_ids"].shape[1]
        cases.append({"text": text, "input_ids": inputs["input_ids"][0].tolist(), "bucket": buckets.pick(width, BUCKETS), "embedding": embedding.tolist()})
    assert {c["bucket"] for c in cases} == set(BUCKETS)
    model_json = json.loads((report.out_dir / "model.json").read_text())
    weights = len(model_json["weightsManifest"][0]["weights"])
    fixture = tmp_path / "buckets.json"
    fixture.write_text(json.dumps({"model_dir": str(report.out_dir), "weights": weights, "cases": cases}))
    proc = subprocess.run(
        ["node", "--import", "tsx", "--test", "--test-reporter=spec", "test/buckets/buckets.test.ts", "test/buckets/bundle.test.ts"],
        cwd=APP, env={**os.environ, "EDGEBERT_DEMO_BUCKETS": str(fixture)}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0 and "ℹ pass 2" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_a_weight_named_like_a_node_another_bucket_computes_is_renamed(tmp_path: Path) -> None:
    """The converter folds a short bucket's shape-dependent subgraph (MPNet's relative-position bias at 16 tokens)
    into a weight named like the node the long bucket computes; in the manifest both graphs list, that weight must not
    shadow the node (tfjs: "NodesExecutionOrderError: Input ... is unreachable")."""
    import json

    import numpy as np

    from edgebert.targets.tfjs.shared_weights import SHARD, merge

    def graph(directory: Path, nodes: list[dict], weights: dict[str, np.ndarray]) -> Path:
        directory.mkdir()
        (directory / "w.bin").write_bytes(b"".join(w.tobytes() for w in weights.values()))
        specs = [{"name": n, "shape": list(w.shape), "dtype": "float32"} for n, w in weights.items()]
        manifest = [{"paths": ["w.bin"], "weights": specs}]
        (directory / "model.json").write_text(json.dumps({"modelTopology": {"node": nodes}, "weightsManifest": manifest}))
        return directory

    shared = np.ones((2, 2), np.float32)
    short = graph(tmp_path / "16", [{"name": "w", "op": "Const"}, {"name": "bias", "op": "Const"},
                                    {"name": "add", "op": "Add", "input": ["w", "bias"]}],
                  {"w": shared, "bias": np.zeros((1, 16), np.float32)})  # fmt: skip
    long = graph(tmp_path / "128", [{"name": "w", "op": "Const"}, {"name": "shape", "op": "Const"},
                                    {"name": "bias", "op": "Reshape", "input": ["w", "shape"]},
                                    {"name": "add", "op": "Add", "input": ["w", "bias"]}],
                 {"w": shared, "shape": np.array([4.0], np.float32)})  # fmt: skip
    out = tmp_path / "out"
    out.mkdir()
    merge({16: short, 128: long}, out)
    for name in ("model-16.json", "model.json"):
        model = json.loads((out / name).read_text())
        weights = {w["name"] for w in model["weightsManifest"][0]["weights"]}
        computed = {n["name"] for n in model["modelTopology"]["node"] if n["op"] != "Const"}
        assert not weights & computed, (name, weights & computed)
        assert model["weightsManifest"][0]["paths"] == [SHARD]
    short_graph = json.loads((out / "model-16.json").read_text())["modelTopology"]["node"]
    assert {"name": "add", "op": "Add", "input": ["w", "bias/seq_16"]} in short_graph and "w" in weights  # w shared once


def test_the_app_latency_schedule_times_each_text_once_per_mode_in_alternating_runs() -> None:
    """Each mode runs over a run's texts in turn (a timed call follows calls of its own mode, as in an app), the first
    mode alternating, and every text is timed once in each mode."""
    runs = schedule(25, ["fixed", "buckets"], run=10)
    assert [m for m, _ in runs] == ["fixed", "buckets", "buckets", "fixed", "fixed", "buckets"]
    assert runs[0][1] == runs[1][1] == list(range(10)) and runs[-1][1] == list(range(20, 25))
    for mode in ("fixed", "buckets"):
        assert sorted(i for m, indices in runs if m == mode for i in indices) == list(range(25))
