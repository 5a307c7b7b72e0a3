"""Unstructured magnitude sparsity: exact per-module fractions of the smallest weights, gzip size, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from edgebert.compress.magnitude import (
    apply_magnitude_sparsity,
    encoder_linears,
    gzip_size,
)
from edgebert.families import BERT

LINEARS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense", "intermediate.dense", "output.dense")


def _weights(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.9])
def test_the_smallest_fraction_of_each_encoder_linear_is_zeroed(tiny_bert: Path, fraction: float) -> None:
    from torch.nn.utils import prune
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_bert).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    record = apply_magnitude_sparsity(model, BERT, fraction)
    modules = encoder_linears(model, BERT)
    assert [name for name, _ in modules] == [f"layer.{i}.{n}" for i in range(2) for n in LINEARS]
    assert record["modules"] == 12 and record["zeroed"] == sum(round(fraction * m.weight.numel()) for _, m in modules)
    for name, module in modules:
        w = module.weight.detach()
        original = before[f"encoder.{name}.weight"]
        zero = w == 0
        assert int(zero.sum()) == round(fraction * w.numel()), name
        assert float(original[zero].abs().max()) <= float(original[~zero].abs().min())  # the smallest |w| went
        assert torch.equal(w[~zero], original[~zero])
        assert not prune.is_pruned(module) and not hasattr(module, "weight_orig")  # baked in: a plain dense weight
    for key, tensor in model.state_dict().items():
        if not (key.startswith("encoder.") and key.endswith("weight") and "LayerNorm" not in key):
            assert torch.equal(tensor, before[key]), key  # biases, norms, embeddings, pooler untouched


def test_gzip_size_matches_gzip(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096 + b"\0" * 100_000
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert abs(gzip_size(path) - len(gzip.compress(data, compresslevel=6))) <= 32  # header fields differ only


def test_compress_cli_magnitude_sparsity_shrinks_gzip_only(run_cli, tiny_bert: Path, tmp_path: Path) -> None:
    out = tmp_path / "sparse"
    code, stdout, err = run_cli("compress", "--model", str(tiny_bert), "--out", str(out), "--magnitude-sparsity", "0.5", "--quiet")
    assert code == 0, err
    weights, source = _weights(out), _weights(tiny_bert)
    for i in range(2):
        for name in LINEARS:
            w = weights[f"encoder.layer.{i}.{name}.weight"]
            assert int((w == 0).sum()) == round(0.5 * w.numel()), name
            assert w.shape == source[f"encoder.layer.{i}.{name}.weight"].shape
    assert torch.equal(weights["embeddings.word_embeddings.weight"], source["embeddings.word_embeddings.weight"])
    raw_out, raw_src = (out / "model.safetensors").read_bytes(), (tiny_bert / "model.safetensors").read_bytes()
    assert len(gzip.compress(raw_out, 6)) < 0.9 * len(gzip.compress(raw_src, 6))  # measured here, not trusted
    m = json.loads((out / "edgebert.json").read_text())["magnitude"]
    assert m["gzip_bytes"]["after"] < m["gzip_bytes"]["before"]
    assert m["model_safetensors_bytes"]["after"] == m["model_safetensors_bytes"]["before"] == len(raw_out)
    assert "compressed size only" in m["note"] and "latency" in m["note"]
    summary = json.loads(stdout)
    assert summary["magnitude_sparsity"]["gzip_bytes"] == {k: m["gzip_bytes"][k] for k in ("before", "after")}
    assert summary["heads_per_layer"] == [4, 4] and summary["intermediate_size"] == 64  # nothing removed structurally
    assert summary["cosine_to_source"]["mean"] < 1.0


@pytest.mark.parametrize("value", ["1.0", "1.5", "-0.1", "nan", "abc"])
def test_bad_magnitude_fraction_is_one_line_exit_2(run_cli, tiny_bert: Path, tmp_path: Path, value: str) -> None:
    out = tmp_path / "out"
    code, _, err = run_cli("compress", "--model", str(tiny_bert), "--out", str(out), f"--magnitude-sparsity={value}")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "--magnitude-sparsity" in lines[0] and "Traceback" not in err, err
    assert not out.exists()


def test_help_says_it_helps_compressed_size_only(run_cli) -> None:
    code, stdout, _ = run_cli("compress", "--help")
    assert code == 0
    text = " ".join(stdout.split())
    assert "--magnitude-sparsity" in text and "zip/gzip-compressed size only" in text and "NOT latency" in text
    assert "--heal-steps" in text and "--heal-corpus" in text
