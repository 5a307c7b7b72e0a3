"""The ExecuTorch target: one `model.pte` (XNNPACK-delegated, dynamic batch and sequence) checked in ExecuTorch's own
runtime against PyTorch, for an embedder and a classifier, and benched beside the other targets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_arm64 import require_installed
from test_arm64_paths import TEXTS as ARM64_TEXTS
from test_arm64_paths import check_arm64

from edgebert.config import ARM64_CPUS


@pytest.fixture(scope="module")
def exported(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from edgebert.export import export

    out = tmp_path_factory.mktemp("et") / "model-executorch"
    export("executorch", model=tiny_bert, out=out, seq_len=32, quiet=True)
    return out


def test_the_program_computes_the_models_embeddings_at_any_batch_and_length(tiny_bert: Path, exported: Path) -> None:
    from edgebert.modelio import load_model
    from edgebert.parity import encode
    from edgebert.targets import get_exporter

    manifest = json.loads((exported / "edgebert.json").read_text())
    assert manifest["target"] == "executorch" and manifest["files"] == {"model.pte": (exported / "model.pte").stat().st_size}
    assert manifest["parity"]["passed"] and manifest["parity"]["min_cosine"] > 0.9999
    assert manifest["target_details"]["delegate"] == "XNNPACK" and not manifest["static_shape"]
    loaded = load_model(tiny_bert)
    runner = get_exporter("executorch").load_runner(exported, manifest)
    for texts, length in ((["hello world"], 8), (["a man plays the guitar on stage", "the quick brown fox", "why"], 32)):
        batch = encode(loaded.tokenizer, texts, length, pad_to_seq_len=False)
        got = runner.run(batch)
        with torch.no_grad():
            expected = loaded.embedder(*[torch.from_numpy(batch[n]).long() for n in loaded.family.input_names()])
        np.testing.assert_allclose(got["sentence_embedding"], expected[0].numpy(), atol=1e-5)
        assert got["last_hidden_state"].shape == tuple(expected[1].shape)


def test_a_classifier_ships_its_head_and_labels(tmp_path: Path) -> None:
    from model_zoo import build_bert

    from edgebert.export import export

    model = build_bert(tmp_path / "cls", head="sequence-classification", num_labels=2, id2label={0: "negative", 1: "positive"})
    report = export("executorch", model=model, out=tmp_path / "out", seq_len=32, quiet=True)
    manifest = report.manifest
    assert manifest["task"] == "text-classification" and manifest["outputs"][0]["labels"] == ["negative", "positive"]
    checks = [c for p in manifest["parity"]["kernel_paths"].values() if isinstance(p, dict) for c in p.values() if isinstance(c, dict)]
    assert all(c.get("agreement") == 1.0 for c in checks if "agreement" in c)


def printed_python_snippet(out_dir: Path) -> list[str]:
    """The Python lines the export summary prints for an ExecuTorch export, as a user copies them."""
    import io

    from rich.console import Console

    from edgebert.export import ExportReport
    from edgebert.summary import print_export_summary

    manifest = json.loads((out_dir / "edgebert.json").read_text())
    text = io.StringIO()
    print_export_summary(ExportReport(out_dir=out_dir, manifest=manifest), Console(file=text, width=4000, soft_wrap=True))
    lines = text.getvalue().splitlines()
    start = lines.index("load in Python (executorch's runtime):") + 1
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("  "))
    return [line[2:] for line in lines[start:end]]


def run_printed_snippet(out_dir: Path) -> subprocess.CompletedProcess:
    """The printed lines in a fresh interpreter (no edgebert import), printing the first output's shape."""
    code = "\n".join([*printed_python_snippet(out_dir), "print(list(outputs[0].shape))"])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=out_dir.parent)


def test_the_printed_python_snippet_runs_the_fp32_program(exported: Path) -> None:
    manifest = json.loads((exported / "edgebert.json").read_text())
    assert manifest["target_details"]["kernel_libraries"] == [] and manifest["target_details"]["delegates"] == ["XnnpackBackend"]
    done = run_printed_snippet(exported)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1, 32]"  # sentence_embedding of one text: [1, hidden]


@pytest.mark.parametrize("recipe", ["int8", "int4", "w4a8"])
def test_integer_recipes_hold_parity_and_say_what_they_kept_in_float(
    tiny_bert: Path, exported: Path, tmp_path: Path, recipe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """int8 also runs on ExecuTorch's aarch64 runtime on every emulated ARM64 CPU model (the CI-sized ARM64 check of
    this runtime; tests/test_arm64_paths.py has ONNX's and LiteRT's)."""
    from edgebert.export import export

    if recipe == "int8":
        require_installed(executorch=True)
        monkeypatch.setenv("EDGEBERT_ARM64_TEXTS", str(ARM64_TEXTS))
    report = export("executorch", model=tiny_bert, out=tmp_path / recipe, seq_len=32, quantize=recipe, quiet=True)
    manifest = report.manifest
    if recipe == "int8":
        check_arm64(manifest["parity"], [f"arm64-{cpu}" for cpu in ARM64_CPUS])
        assert list(manifest["parity"]["kernel_paths"]) == ["host", *(f"arm64-{cpu}" for cpu in ARM64_CPUS)]
    details = manifest["target_details"]["quantization"]
    from edgebert.targets.executorch.quantize import LADDERS

    assert manifest["parity"]["passed"] and details["recipe"] == recipe and tuple(details["float_islands"]) in LADDERS[recipe]
    assert details["guard"]["min_cosine"] >= details["guard"]["required"]
    assert (tmp_path / recipe / "model.pte").stat().st_size < (exported / "model.pte").stat().st_size
    operators = manifest["target_details"]["operators"]
    if recipe == "int8":  # int8 rows: the portable embedding kernel, nothing beyond what every runtime has
        assert "portable embedding kernel" in details["tables"] and "aten::embedding.out" in operators["portable"]
        assert manifest["target_details"]["kernel_libraries"] == [] and "quantized" not in operators
    else:  # 4-bit groups need ExecuTorch's quantized kernels: the manifest says so, and the printed snippet registers them
        assert "embedding_4bit" in details["tables"] and manifest["target_details"]["kernel_libraries"] == ["quantized"]
        assert "quantized_decomposed::embedding_4bit.dtype_out" in operators["quantized"]
    done = run_printed_snippet(tmp_path / recipe)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("bits", [8, 4])
def test_quantized_tables_store_what_executorch_kernels_read(bits: int) -> None:
    """A table stored by `table_storage` and looked up by ExecuTorch's own op (its Python reference) gives the rows
    back within half a step of each group's scale; 4 bits pack two to a byte."""
    import torch

    from edgebert.targets.executorch.quantize import INT4_GROUP, QuantizedTable

    table = torch.nn.Embedding(50, 2 * INT4_GROUP)
    torch.nn.init.normal_(table.weight, std=0.5)
    quantized = QuantizedTable(table, bits)
    ids = torch.tensor([[0, 7, 49, 7]])
    rows = quantized(ids)
    assert quantized.weight.dtype == (torch.uint8 if bits == 4 else torch.int8)
    assert quantized.weight.shape == (50, table.embedding_dim // (2 if bits == 4 else 1))
    groups = quantized.scales.shape[1]
    step = quantized.scales[ids[0]].repeat_interleave(table.embedding_dim // groups, dim=1)
    error = (rows[0] - table.weight[ids[0]]).abs()
    assert torch.all(error <= step / 2 + 1e-6) and error.max() > 0
    if bits == 8:  # the portable lookup computes exactly what ExecuTorch's embedding_byte computes
        from edgebert.targets.executorch.quantize import quantized_table_ops

        quantized_table_ops()
        ops = torch.ops.quantized_decomposed
        assert torch.equal(rows, ops.embedding_byte.dtype(quantized.weight, quantized.scales, None, -128, 127, ids, dtype=torch.float32))


def test_float_islands_name_the_ffn_down_projections_only() -> None:
    from edgebert.families import BERT, DISTILBERT
    from edgebert.targets.executorch.quantize import island_pattern

    bert = island_pattern(BERT, ("ffn_output",))
    assert bert.search("encoder.encoder.layer.3.output.dense") and bert.search("encoder.layer.11.output.dense")
    assert not bert.search("encoder.encoder.layer.3.attention.output.dense") and not bert.search("encoder.layer.3.intermediate.dense")
    qkv = island_pattern(DISTILBERT, ("query", "key", "value"))
    assert qkv.search("encoder.transformer.layer.0.attention.k_lin") and not qkv.search("encoder.transformer.layer.0.attention.out_lin")


def test_other_recipes_are_refused_with_one_line(run_cli, tiny_bert: Path, tmp_path: Path) -> None:  # noqa: ANN001
    code, _, err = run_cli("export", "--model", str(tiny_bert), "--target", "executorch", "--quantize", "int8-static", "--out", str(tmp_path / "o"))
    assert code == 2 and "--quantize int8-static is not offered by target executorch; choose one of: none, int8, int4" in err, err
    assert not (tmp_path / "o").exists()


def test_bench_runs_the_program_beside_pytorch(tiny_bert: Path, exported: Path, tmp_path: Path) -> None:
    from edgebert.bench.harness import build_config, run_bench
    from edgebert.bench.measure import MeasureJob

    sts = tmp_path / "sts.csv"
    sts.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\nthe man,the woman,2\n")
    job = MeasureJob(seq_lens=[16], batches=[1], threads=[1], warmup=1, repeats=2, sts_max_length=32, sts_path=str(sts))
    report = run_bench(build_config([f"torch={tiny_bert}", f"pte={exported}"], job=job, isolate=False), tmp_path / "r", echo=lambda m: None).report
    item = next(i for i in report["items"] if i["label"] == "pte")
    assert item["status"] == "ok" and item["target"] == "executorch" and item["runtime"].startswith("executorch ")
    torch_item = next(i for i in report["items"] if i["label"] == "torch")
    assert item["sts"]["spearman"] == pytest.approx(torch_item["sts"]["spearman"], abs=1e-6)
