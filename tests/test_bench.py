"""`edgebert bench`: items, retention arithmetic, failing items, interrupts and the three report files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from edgebert.bench import harness
from edgebert.bench.harness import build_config, run_bench
from edgebert.bench.items import parse_items
from edgebert.bench.measure import MeasureJob, latency_texts, make_tokenize
from edgebert.bench.metrics import pareto_front, ratio, sts_spearman_from_embeddings, unique_sentences
from edgebert.bench.report import derive
from edgebert.data import STSPairs
from edgebert.errors import UserError

MD_COLUMNS = (
    "item", "task", "target", "quant", "size MB", "params M", "model ms median", "p90", "tok+model ms", "mem Δ MB",
    "STS-B ρ", "accuracy", "agreement", "retention", "speed-up", "compression", "status",
)  # fmt: skip


@pytest.fixture(scope="module")
def tiny_onnx(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from edgebert.export import export

    out = tmp_path_factory.mktemp("bench-exports") / "tiny-onnx"
    export("onnx", model=str(tiny_bert), out=out, seq_len=32, quiet=True)
    return out


@pytest.fixture(scope="module")
def broken_onnx(tiny_onnx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export dir whose model.onnx is garbage: loads fail in onnxruntime."""
    out = tmp_path_factory.mktemp("bench-broken") / "broken-onnx"
    shutil.copytree(tiny_onnx, out)
    (out / "model.onnx").write_bytes(b"this is not an onnx model")
    return out


@pytest.fixture()
def sts_csv(tmp_path: Path) -> Path:
    rows = [
        ("a man is playing a guitar.", "a man plays the guitar.", 4.8),
        ("the dog jumps over the cat.", "a cat and a dog.", 2.0),
        ("hello world.", "the president addresses congress.", 0.2),
        ("a woman is playing music on stage.", "a woman plays music.", 4.0),
        ("the quick brown fox.", "a lazy dog.", 1.0),
        ("a man is playing a guitar.", "prices rose this year.", 0.0),
    ]
    path = tmp_path / "sts.csv"
    path.write_text("".join(f"{a},{b},{s}\n" for a, b, s in rows))
    return path


def quick_job(sts: Path | None = None, **kw) -> MeasureJob:
    return MeasureJob(seq_lens=[16], batches=[1], threads=[1], warmup=1, repeats=3, sts_path=str(sts) if sts else None, sts_max_length=32, **kw)


# ----------------------------------------------------------------------------------------- items


def test_items_resolve_kinds_labels_and_torch_int8(tiny_bert: Path, tiny_onnx: Path) -> None:
    specs = parse_items([str(tiny_bert), f"mine={tiny_onnx}", str(tiny_onnx / "model.onnx")], torch_int8=True)
    assert [(s.kind, s.target) for s in specs] == [
        ("pytorch", "pytorch"), ("pytorch", "pytorch"), ("export", "onnx"), ("onnx", "onnx"),
    ]  # fmt: skip
    assert specs[0].label == "tiny-bert" and specs[1].label == "tiny-bert torch-int8" and specs[1].torch_int8
    assert specs[2].label == "mine"
    assert specs[3].label == "tiny-onnx" and specs[3].tokenizer == str(tiny_onnx)  # tokenizer beside the file
    assert len({s.label for s in parse_items([str(tiny_bert), str(tiny_bert)])}) == 2  # labels made unique


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "does not exist"),
        (lambda d: (d / "x.bin").write_bytes(b"0") and d / "x.bin", "only .onnx and .tflite"),
        (lambda d: (d / "m.onnx").write_bytes(b"0") and d / "m.onnx", "needs a tokenizer"),
        (lambda d: d, "neither a model dir"),
    ],
)
def test_items_bad_input_is_a_user_error(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_items([str(make(tmp_path))])


def test_bad_options_exit_2_with_one_line(tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from edgebert.cli import main

    assert main(["bench", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert main(["bench", str(tiny_bert), "--out", str(tmp_path / "o"), "--repeats", "0"]) == 2
    assert main(["bench", str(tiny_bert), "--out", str(tmp_path / "o"), "--sts", str(tmp_path / "none.csv")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 3 and all(line.startswith("edgebert: error: ") for line in errors)
    assert not (tmp_path / "o").exists()


def test_latency_inputs_fill_every_position(tiny_bert: Path) -> None:
    from edgebert.bench.items import resolve_item, open_item

    item = open_item(resolve_item(str(tiny_bert)))
    for batch in (1, 3):
        inputs = make_tokenize(item, latency_texts(batch, 24), 24)()
        assert inputs["input_ids"].shape == (batch, 24) and inputs["attention_mask"].all()


# ----------------------------------------------------------------------------------------- arithmetic


def _fake(label: str, bytes_: int, median: float, sts: float | None, e2e: float | None = None) -> dict:
    lat = {"seq_len": 128, "batch": 1, "threads": 1, "model_ms": {"median": median, "p90": median * 1.1}}
    lat["e2e_ms"] = {"median": e2e if e2e is not None else median + 1}
    return {"label": label, "status": "ok", "model_bytes": bytes_, "latency": [lat], "sts": {"spearman": sts} if sts is not None else None}


def test_retention_speedup_compression_against_reference() -> None:
    items = [
        _fake("ref", 90_000_000, 40.0, 0.82),
        _fake("int8", 30_000_000, 10.0, 0.80),
        _fake("fp16", 45_000_000, 50.0, 0.82),
        _fake("big-slow", 100_000_000, 80.0, 0.70),
        {"label": "broken", "status": "failed", "error": "x"},
    ]
    derive(items, "ref", (128, 1, 1))
    d = {i["label"]: i["derived"] for i in items}
    assert d["ref"]["sts_retention"] == pytest.approx(1.0) and d["ref"]["speedup"] == pytest.approx(1.0)
    assert d["int8"]["sts_retention"] == pytest.approx(0.80 / 0.82)
    assert d["int8"]["speedup"] == pytest.approx(4.0)
    assert d["int8"]["speedup_e2e"] == pytest.approx(41.0 / 11.0)
    assert d["int8"]["compression"] == pytest.approx(3.0)
    assert d["fp16"]["speedup"] == pytest.approx(0.8) and d["fp16"]["compression"] == pytest.approx(2.0)
    assert d["broken"]["sts_retention"] is None and d["broken"]["speedup"] is None and d["broken"]["pareto"] is None
    assert d["big-slow"]["pareto"] is False  # beaten by ref on size, latency and retention
    assert d["int8"]["pareto"] and d["ref"]["pareto"] and d["fp16"]["pareto"]  # fp16 keeps full retention


def test_ratio_and_pareto_edge_cases() -> None:
    assert ratio(1.0, 0.0) is None and ratio(None, 1.0) is None and ratio(float("nan"), 1.0) is None
    assert pareto_front([(1, 1), (2, 2), (1, 1)], maximize=(False, False)) == [True, False, True]
    assert pareto_front([(1, 5), (5, 1), (3, 3), (4, 4)], maximize=(False, False)) == [True, True, True, False]


def test_sts_spearman_matches_scipy() -> None:
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    pairs = STSPairs([f"s{i}" for i in range(40)], [f"s{(i * 7) % 50}" for i in range(40)], list(rng.uniform(0, 5, 40)))
    sentences, left, right = unique_sentences(pairs)
    assert len(sentences) == len(set(pairs.sentences1 + pairs.sentences2))
    emb = rng.normal(size=(len(sentences), 8))
    ours = sts_spearman_from_embeddings(emb, left, right, pairs.scores)
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    theirs = spearmanr((unit[left] * unit[right]).sum(1), pairs.scores).statistic
    assert ours == pytest.approx(theirs, abs=1e-12)


# ----------------------------------------------------------------------------------------- whole runs


def test_bench_in_process_writes_report_and_keeps_going_past_a_failure(
    tiny_bert: Path, tiny_onnx: Path, broken_onnx: Path, sts_csv: Path, tmp_path: Path
) -> None:
    config = build_config(
        [str(tiny_bert), str(broken_onnx), str(tiny_onnx)], torch_int8=True, job=quick_job(sts_csv), isolate=False
    )
    out = tmp_path / "report"
    outcome = run_bench(config, out, echo=lambda m: None)
    assert not outcome.interrupted
    for name in ("report.json", "report.md", "report.png"):
        assert (out / name).stat().st_size > 0
    report = json.loads((out / "report.json").read_text())
    items = {i["label"]: i for i in report["items"]}
    assert list(items) == ["tiny-bert", "tiny-bert torch-int8", "broken-onnx", "tiny-onnx"]
    assert items["broken-onnx"]["status"] == "failed" and items["broken-onnx"]["error"]
    ok = [items[k] for k in ("tiny-bert", "tiny-bert torch-int8", "tiny-onnx")]
    assert all(i["status"] == "ok" for i in ok)
    ref, onnx = items["tiny-bert"], items["tiny-onnx"]
    assert ref["reference"] and onnx["derived"]["sts_retention"] == pytest.approx(1.0, abs=1e-3)  # same model
    assert onnx["derived"]["sts_retention"] == pytest.approx(onnx["sts"]["spearman"] / ref["sts"]["spearman"])
    assert onnx["derived"]["compression"] == pytest.approx(ref["model_bytes"] / onnx["model_bytes"])
    lat = onnx["latency"][0]
    assert lat["model_ms"]["n"] == 3 and len(lat["model_ms"]["raw"]) == 3 and lat["computed_seq_len"] == 16
    assert onnx["derived"]["speedup"] == pytest.approx(ref["latency"][0]["model_ms"]["median"] / lat["model_ms"]["median"])
    assert onnx["params"] == ref["params"] > 0 and onnx["memory"]["peak_rss_mb"] > 0
    assert report["machine"]["cpu_model"] and report["machine"]["libraries"]["torch"]
    assert report["machine"]["int8_dot_product"] in ("vnni", "saturating-int16", "arm64", "other")
    assert any("warm-up" in line for line in report["method"])
    md = (out / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| item"))
    assert [c.strip() for c in header.strip("|").split("|")] == list(MD_COLUMNS)
    broken_row = next(line for line in md.splitlines() if line.startswith("| broken-onnx"))
    assert "failed:" in broken_row
    with pytest.raises(UserError, match="not empty"):
        run_bench(config, out, echo=lambda m: None)


def test_interrupt_keeps_what_was_measured(tiny_bert: Path, tiny_onnx: Path, tmp_path: Path, monkeypatch) -> None:
    real = harness.measure_item
    calls = []

    def interrupt_second(spec, job, sink=None):
        calls.append(spec.label)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(spec, job, sink)

    monkeypatch.setattr(harness, "measure_item", interrupt_second)
    config = build_config([str(tiny_bert), str(tiny_onnx), str(tiny_onnx / "model.onnx")], job=quick_job(), isolate=False)
    outcome = run_bench(config, tmp_path / "r", echo=lambda m: None)
    assert outcome.interrupted
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["status"] == "interrupted"
    assert [i["status"] for i in report["items"]] == ["ok", "interrupted", "not run"]
    assert report["items"][0]["latency"][0]["model_ms"]["median"] > 0
    assert "interrupted" in (tmp_path / "r" / "report.md").read_text()


def test_cli_worker_processes_reference_and_failed_item(
    tiny_bert: Path, tiny_onnx: Path, broken_onnx: Path, sts_csv: Path, tmp_path: Path
) -> None:
    """The real path: one worker process per item, --reference naming an item, a failed item -> exit 1."""
    from edgebert.cli import main

    out = tmp_path / "cli"
    code = main([
        "bench", f"onnx={tiny_onnx}", str(broken_onnx), "--reference", str(tiny_bert), "--out", str(out),
        "--sts", str(sts_csv), "--sts-limit-for", "onnx=4", "--seq-len", "16", "--repeats", "2", "--warmup", "1",
    ])  # fmt: skip
    assert code == 1
    report = json.loads((out / "report.json").read_text())
    assert report["reference"] == "tiny-bert"
    items = {i["label"]: i for i in report["items"]}
    assert items["tiny-bert"]["sts"]["pairs"] == 6 and items["onnx"]["sts"]["pairs"] == 4
    # retention on the same 4 pairs: the reference's Spearman recomputed from its first 4 cosines
    assert items["onnx"]["derived"]["sts_retention"] == pytest.approx(1.0, abs=1e-3)
    assert "(4 pairs)" in (out / "report.md").read_text()
    status = {i["label"]: i["status"] for i in report["items"]}
    assert status == {"tiny-bert": "ok", "onnx": "ok", "broken-onnx": "failed"}
    assert (out / "report.png").exists() and "broken-onnx" in (out / "report.md").read_text()


@pytest.mark.integration
def test_teacher_sts_agrees_with_an_independent_computation(packaged_teacher: Path, shared_data: Path) -> None:
    """Harness STS for the PyTorch teacher vs benchmarks/suites/check_teacher_sts.py (transformers + numpy + scipy)."""
    import importlib.util

    from edgebert.bench.items import open_item, resolve_item
    from edgebert.bench.measure import measure_sts

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "suites" / "check_teacher_sts.py"
    spec = importlib.util.spec_from_file_location("check_teacher_sts", script)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)

    sts = shared_data / "stsb" / "dev.csv"
    limit = 300
    item = open_item(resolve_item(str(packaged_teacher)))
    ours = measure_sts(item, item.make_runner(2), MeasureJob(sts_path=str(sts), sts_limit=limit))["spearman"]
    theirs, pairs = check.independent_spearman(str(packaged_teacher), str(sts), limit=limit)
    assert pairs == limit
    assert ours == pytest.approx(theirs, abs=1e-4)
    assert 0.75 < ours < 0.95


def test_parameter_count_of_a_pruned_model_reads_the_real_shapes(tiny_bert: Path, tmp_path: Path) -> None:
    """Pruned heads and FFN neurons count as removed; no model is built (BertModel cannot prune on meta)."""
    from edgebert.bench.items import count_params_from_config
    from edgebert.compress.compress import compress
    from edgebert.modelio import load_model

    pruned = tmp_path / "pruned"
    compress(tiny_bert, pruned, heads_to_prune={0: [0, 1]}, quiet=True)
    encoder = load_model(pruned).embedder.encoder
    assert count_params_from_config(pruned) == sum(p.numel() for p in encoder.parameters())
    assert count_params_from_config(pruned) < count_params_from_config(tiny_bert)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--timeout", "nan"], "--timeout must be a finite number"),
        (["--timeout", "-1"], "--timeout must be a finite number"),
        (["--threads", "-1"], "--threads must be at least 1"),
        (["--batch", "0"], "--batch must be at least 1"),
        (["--seq-len", "1"], "--seq-len must be at least 2"),
        (["--warmup", "-1"], "--warmup must be at least 0"),
        (["--sst2-limit", "0"], "--sst2-limit must be at least 1"),
        (["--sts", "BAD_STS"], "outside the STS-B scale"),
        (["--sts", "BINARY"], "is not UTF-8 text"),
    ],
)
def test_bad_numbers_and_files_exit_2_with_one_line(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    from edgebert.cli import main

    (tmp_path / "bad.csv").write_text("a,b,1\nc,d,nan\n")
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 16)
    subs = {"BAD_STS": str(tmp_path / "bad.csv"), "BINARY": str(tmp_path / "binary.csv")}
    assert main(["bench", str(tiny_bert), "--out", str(tmp_path / "o"), *[subs.get(a, a) for a in extra]]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("edgebert: error: ") and fragment in errors[0], errors
    assert not (tmp_path / "o").exists()


def test_api_wrong_types_are_user_errors(tiny_bert: Path, tmp_path: Path) -> None:
    from edgebert.bench.harness import build_config, run_bench

    with pytest.raises(UserError, match="bench items must be a list of strings"):
        build_config(str(tiny_bert))  # type: ignore[arg-type]
    config = build_config([str(tiny_bert)])
    with pytest.raises(UserError, match="--out must be a path"):
        run_bench(config, 123)  # type: ignore[arg-type]


def test_an_unsupported_model_is_a_failed_item_and_the_others_run(tiny_bert: Path, sts_csv: Path, tmp_path: Path) -> None:
    """One unsupported item aborted the whole bench (exit 2, no report)."""
    import shutil

    other = tmp_path / "other-family"
    shutil.copytree(tiny_bert, other)
    config_file = other / "config.json"
    config_file.write_text(config_file.read_text().replace('"model_type": "bert"', '"model_type": "gpt2"'))
    config = build_config([str(tiny_bert), str(other)], job=quick_job(sts_csv), isolate=False)
    run_bench(config, tmp_path / "report", echo=lambda m: None)
    items = {i["label"]: i for i in json.loads((tmp_path / "report" / "report.json").read_text())["items"]}
    assert items["tiny-bert"]["status"] == "ok"
    assert items["other-family"]["status"] == "failed" and "gpt2" in items["other-family"]["error"]
