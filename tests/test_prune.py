"""Structured pruning: importance, physical removal of heads / FFN neurons, the compress() API and exports."""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path

import pytest
import torch
from conftest import WORDS, build_tiny_bert

from edgebert.compress.compress import compress
from edgebert.compress.importance import compute_importance, read_calibration
from edgebert.compress.prune import (
    HeadLayout,
    apply_ffn_pruning,
    count_parameters,
    parse_head_list,
    select_ffn,
    select_heads,
)
from edgebert.errors import UserError
from edgebert.modelio import load_weights
from edgebert.families import BERT


def _sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20))) for _ in range(n)]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calib") / "calib.txt.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("\n\n".join(_sentences(48)) + "\n")
    return path


@pytest.fixture(scope="module")
def bert4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 layers x 4 heads, FFN 64: room for non-uniform head counts."""
    return build_tiny_bert(tmp_path_factory.mktemp("b4") / "bert4", layers=3, hidden=32, heads=4, ffn=64, seed=3)


@pytest.fixture(scope="module")
def pruned(bert4: Path, calibration: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pruned") / "pruned"
    compress(bert4, out, prune_heads=0.34, prune_ffn=0.5, calibration=calibration, calibration_samples=32, seq_len=32, quiet=True)
    return out


def _load(path: Path):
    from transformers import AutoModel

    return load_weights(AutoModel, path)[0].eval()  # edgebert's loader builds the pruned heads (transformers 5 does not)


def _inputs(path: Path, texts: list[str]) -> dict[str, torch.Tensor]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    return dict(tok(texts, padding=True, return_tensors="pt"))


# ------------------------------------------------------------------------------------------ the artifact


def test_pruned_model_is_smaller_and_reloads_with_automodel(bert4: Path, pruned: Path) -> None:
    before, after = _load(bert4), _load(pruned)
    assert count_parameters(after) < count_parameters(before)
    config = json.loads((pruned / "config.json").read_text())
    assert config["intermediate_size"] == 32
    heads = [4 - len(config["pruned_heads"].get(str(i), [])) for i in range(3)]
    assert sum(heads) == 4 * 3 - 4  # round(0.34 * 12) = 4 heads gone
    assert min(heads) >= 1
    for i, layer in enumerate(after.encoder.layer):
        assert tuple(layer.attention.self.query.weight.shape) == (heads[i] * 8, 32)
        assert tuple(layer.attention.output.dense.weight.shape) == (32, heads[i] * 8)
        assert tuple(layer.intermediate.dense.weight.shape) == (32, 32)
        assert tuple(layer.output.dense.weight.shape) == (32, 32)
    assert (pruned / "model.safetensors").stat().st_size < (bert4 / "model.safetensors").stat().st_size


def test_manifest_records_lineage_heads_sizes_and_parameters(bert4: Path, pruned: Path, calibration: Path) -> None:
    m = json.loads((pruned / "edgebert.json").read_text())
    assert (m["kind"], m["step"], m["task"]) == ("model", "compress", "feature-extraction")
    assert m["parent"] == str(bert4.absolute())
    recipe = m["recipe"]
    assert recipe["prune_heads"] == 0.34 and recipe["prune_ffn"] == 0.5
    assert recipe["calibration"] == str(calibration.absolute())
    assert recipe["importance"] == "output-sensitivity"
    config = json.loads((pruned / "config.json").read_text())
    assert m["pruning"]["pruned_heads"] == config["pruned_heads"]
    assert m["pruning"]["intermediate_size"] == {"before": 64, "after": 32}
    assert m["pruning"]["heads_per_layer"]["before"] == [4, 4, 4]
    assert m["parameters"]["after"]["encoder"] < m["parameters"]["before"]["encoder"]
    assert m["parameters"]["after"]["encoder"] == count_parameters(_load(pruned))
    assert m["model"]["heads_per_layer"] == m["pruning"]["heads_per_layer"]["after"]
    assert 0 < m["metrics"]["cosine_to_source"]["min"] <= 1.0


def test_head_pruned_model_equals_head_masked_original(bert4: Path, tmp_path: Path) -> None:
    plan = {"0": [1], "1": [0, 3], "2": [2]}
    out = tmp_path / "heads"
    compress(bert4, out, heads_to_prune=json.dumps(plan), quiet=True)
    original, smaller = _load(bert4), _load(out)
    inputs = _inputs(bert4, ["the quick brown fox jumps over the lazy dog", "hello world"])
    hooks = []  # each removed head's context zeroed before the output projection (transformers 5 has no head_mask)
    for layer, heads in plan.items():
        attention = original.encoder.layer[int(layer)].attention.self
        size = attention.attention_head_size
        keep = torch.ones(attention.all_head_size)
        for head in heads:
            keep[head * size : (head + 1) * size] = 0.0
        hooks.append(attention.register_forward_hook(lambda _m, _i, out, keep=keep: (out[0] * keep, *out[1:])))
    with torch.no_grad():
        expected = original(**inputs).last_hidden_state
        got = smaller(**inputs).last_hidden_state
    for hook in hooks:
        hook.remove()
    assert torch.allclose(got, expected, atol=1e-5), float((got - expected).abs().max())
    assert not torch.allclose(original(**inputs).last_hidden_state, expected, atol=1e-4)  # the mask did something


def test_ffn_pruned_model_equals_neuron_masked_original(bert4: Path) -> None:
    original, smaller = _load(bert4), _load(bert4)
    rng = torch.Generator().manual_seed(0)
    keep = [sorted(torch.randperm(64, generator=rng)[:40].tolist()) for _ in range(3)]
    assert apply_ffn_pruning(smaller, BERT, smaller.config, keep) == 40
    masks = []
    for layer, k in zip(original.encoder.layer, keep):
        m = torch.zeros(64)
        m[k] = 1.0
        masks.append(layer.intermediate.register_forward_hook(lambda _m, _i, out, m=m: out * m))
    inputs = _inputs(bert4, ["a man is playing a guitar on the stage"])
    with torch.no_grad():
        expected = original(**inputs).last_hidden_state
        got = smaller(**inputs).last_hidden_state
    for h in masks:
        h.remove()
    assert torch.allclose(got, expected, atol=1e-5)
    assert smaller.config.intermediate_size == 40


def test_repruning_uses_original_head_ids(bert4: Path, tmp_path: Path, calibration: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    compress(bert4, first, heads_to_prune='{"0": [0, 1]}', quiet=True)
    with pytest.raises(UserError, match="already pruned"):
        compress(first, tmp_path / "x", heads_to_prune='{"0": [1]}', quiet=True)
    with pytest.raises(UserError, match="all 2 heads of layer 0"):
        compress(first, tmp_path / "x", heads_to_prune='{"0": [2, 3]}', quiet=True)
    compress(first, second, prune_heads=0.25, head_scope="layer", calibration=calibration, calibration_samples=16, seq_len=32, quiet=True)
    config = json.loads((second / "config.json").read_text())
    assert {0, 1} <= set(config["pruned_heads"]["0"]) and len(config["pruned_heads"]["0"]) == 3  # 1 of the 2 left
    assert all(len(config["pruned_heads"][str(i)]) == 1 for i in (1, 2))
    _load(second)


def test_model_with_its_own_mlm_head_keeps_it_and_ranks_by_mlm_loss(tmp_path: Path, calibration: Path) -> None:
    from transformers import BertForMaskedLM

    src = build_tiny_bert(tmp_path / "base", layers=2, heads=4)
    mlm = BertForMaskedLM.from_pretrained(src)
    mlm.save_pretrained(tmp_path / "mlm", safe_serialization=True)
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / f).exists():  # transformers 5 writes no special_tokens_map.json
            shutil.copy(src / f, tmp_path / "mlm")
    out = tmp_path / "out"
    report = compress(tmp_path / "mlm", out, prune_heads=0.25, calibration=calibration, calibration_samples=16, seq_len=32, quiet=True)
    assert report.manifest["recipe"]["importance"] == "mlm"
    again, info = load_weights(BertForMaskedLM, out)
    assert not info["missing_keys"]
    assert sum(again.bert.encoder.layer[i].attention.self.num_attention_heads for i in range(2)) == 6


# ------------------------------------------------------------------------------------------ importance


def _zero_head(model: torch.nn.Module, layer: int, head: int, head_dim: int = 8) -> None:
    value = model.encoder.layer[layer].attention.self.value
    with torch.no_grad():
        value.weight[head * head_dim : (head + 1) * head_dim] = 0.0
        value.bias[head * head_dim : (head + 1) * head_dim] = 0.0


@pytest.mark.parametrize("method", ["output-sensitivity", "mlm"])
def test_importance_ranks_a_zeroed_head_and_neuron_lowest(bert4: Path, method: str) -> None:
    from transformers import AutoTokenizer, BertForMaskedLM

    mlm = BertForMaskedLM.from_pretrained(bert4, attn_implementation="eager").eval()
    base = mlm.bert
    _zero_head(base, 1, 2)
    _zero_head(base, 2, 0)
    with torch.no_grad():  # neuron 5 of layer 0: up-projection row and bias 0 -> GELU(0) = 0
        base.encoder.layer[0].intermediate.dense.weight[5] = 0.0
        base.encoder.layer[0].intermediate.dense.bias[5] = 0.0
    tok = AutoTokenizer.from_pretrained(bert4)
    scores = compute_importance(base, BERT, tok, _sentences(24), mlm_head=mlm.cls, method=method, seq_len=32, batch_size=8)
    assert scores.method == method
    assert int(scores.heads[1].argmin()) == 2 and float(scores.heads[1][2]) == 0.0
    assert int(scores.heads[2].argmin()) == 0
    assert all(float(h.min()) > 0 for h in (scores.heads[0],))
    assert int(scores.ffn[0].argmin()) == 5 and float(scores.ffn[0][5]) == 0.0
    assert [len(f) for f in scores.ffn] == [64, 64, 64]
    assert all(p.grad is None for p in base.parameters())
    layout = HeadLayout.of(base.config, BERT)
    plan = select_heads(scores.heads, layout, 2 / 12, "global")
    assert plan == {1: [2], 2: [0]}


def test_importance_is_deterministic(bert4: Path) -> None:
    from transformers import AutoTokenizer

    base, tok = _load(bert4), AutoTokenizer.from_pretrained(bert4)
    a = compute_importance(base, BERT, tok, _sentences(8), seq_len=16)
    b = compute_importance(base, BERT, tok, _sentences(8), seq_len=16)
    assert all(torch.equal(x, y) for x, y in zip(a.heads + a.ffn, b.heads + b.ffn))


# ------------------------------------------------------------------------------------------ selection


def test_global_selection_keeps_every_layers_best_head() -> None:
    layout = HeadLayout(4, [[0, 1, 2, 3]] * 3)
    scores = [torch.tensor([9.0, 8.0, 7.0, 6.0]), torch.tensor([0.1, 0.2, 0.3, 0.4]), torch.tensor([1.0, 1.0, 1.0, 1.0])]
    plan = select_heads(scores, layout, 0.75, "global")  # 9 of 12: exactly the 3 non-best of each layer
    assert plan == {0: [1, 2, 3], 1: [0, 1, 2], 2: [0, 1, 2]}  # ties: the higher id stays
    with pytest.raises(UserError, match="at least 1"):
        select_heads(scores, layout, 0.8, "global")


def test_per_layer_selection_refuses_to_empty_a_layer() -> None:
    layout = HeadLayout(2, [[0, 1], [0, 1]])
    scores = [torch.tensor([1.0, 2.0]), torch.tensor([2.0, 1.0])]
    assert select_heads(scores, layout, 0.5, "layer") == {0: [0], 1: [1]}
    with pytest.raises(UserError, match="all 2 heads of layer 0"):
        select_heads(scores, layout, 0.8, "layer")


def test_ffn_selection_is_uniform_and_keeps_each_layers_best() -> None:
    scores = [torch.tensor([5.0, 1.0, 3.0, 2.0]), torch.tensor([0.0, 9.0, 8.0, 1.0])]
    assert select_ffn(scores, 0.5) == [[0, 2], [1, 2]]
    assert select_ffn(scores, 0.1) is None  # round(0.4) = 0 neurons: nothing to do
    with pytest.raises(UserError, match="all 4 FFN neurons"):
        select_ffn(scores, 0.9)


def test_parse_head_list_reads_json_text_and_files(tmp_path: Path) -> None:
    layout = HeadLayout(4, [[0, 1, 2, 3], [0, 1, 2, 3]])
    assert parse_head_list('{"1": [3, 0, 3]}', layout) == {1: [0, 3]}
    f = tmp_path / "heads.json"
    f.write_text('{"0": [2]}')
    assert parse_head_list(str(f), layout) == {0: [2]}
    for bad, fragment in (
        ("[1, 2]", "JSON object"),
        ("{not json", "not valid JSON"),
        ('{"5": [0]}', "layer 5 does not exist"),
        ('{"0": [4]}', "no head 4"),
        ('{"0": "1"}', "list of integer"),
        ('{"1": [0, 1, 2, 3]}', "all 4 heads of layer 1"),
    ):
        with pytest.raises(UserError, match=fragment):
            parse_head_list(bad, layout)


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"prune_heads": 1.0}, "--prune-heads must be a fraction in [0, 1)"),
        ({"prune_ffn": -0.1}, "--prune-ffn must be a fraction in [0, 1)"),
        ({"prune_heads": 0.5}, "pass --calibration"),
        ({"prune_ffn": 0.5}, "pass --calibration"),
        ({}, "nothing to prune"),
        ({"prune_ffn": 0.5, "ffn_scope": "global", "calibration": "x"}, "--ffn-scope global is not supported"),
        ({"heads_to_prune": '{"1": [0, 1, 2, 3]}'}, "all 4 heads of layer 1"),
        ({"prune_heads": 0.5, "heads_to_prune": '{"0": [1]}', "calibration": "x"}, "not both"),
        ({"prune_heads": 0.5, "calibration": "/nonexistent/calib.txt"}, "is not a file"),
        ({"heads_to_prune": '{"0": [1]}', "seq_len": "128"}, "--seq-len must be an integer"),
        ({"heads_to_prune": '{"0": [1]}', "batch_size": 2.5}, "--batch-size must be an integer"),
        ({"heads_to_prune": '{"0": [1]}', "seed": -1}, "--seed must be at least 0"),
        ({"heads_to_prune": '{"0": [1]}', "calibration_samples": None}, "--calibration-samples must be an integer"),
        ({"heads_to_prune": '{"0": [1]}', "out": 123}, "--out must be a path"),
        ({"heads_to_prune": '{"0": [1]}', "model": 5}, "a model must be a directory"),
    ],
)
def test_bad_input_is_a_user_error_and_writes_nothing(bert4: Path, tmp_path: Path, kwargs: dict, fragment: str) -> None:
    out = kwargs.pop("out", tmp_path / "out")
    model = kwargs.pop("model", bert4)
    with pytest.raises(UserError) as exc:
        compress(model, out, quiet=True, **kwargs)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_existing_out_needs_force(bert4: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(UserError, match="--force"):
        compress(bert4, out, heads_to_prune='{"0": [0]}', quiet=True)
    assert (out / "keep.txt").exists()
    compress(bert4, out, heads_to_prune='{"0": [0]}', force=True, quiet=True)
    assert not (out / "keep.txt").exists() and (out / "edgebert.json").exists()


def test_empty_calibration_file_is_a_user_error(tmp_path: Path) -> None:
    f = tmp_path / "empty.txt"
    f.write_text("\n  \n")
    with pytest.raises(UserError, match="has no text"):
        read_calibration(f)


# ------------------------------------------------------------------------------------------ exports


@pytest.mark.parametrize("target", ["onnx", "tflite"])
def test_export_of_pruned_model_passes_parity(pruned: Path, tmp_path: Path, target: str) -> None:
    from edgebert.errors import TargetUnavailable
    from edgebert.export import export

    try:
        report = export(target, model=pruned, out=tmp_path / target, seq_len=32, quiet=True)
    except TargetUnavailable as exc:
        pytest.skip(f"{target} toolchain unavailable: {exc}")
    assert report.parity["passed"] and report.parity["min_cosine"] >= 0.9999


def _tfjs_export(model: Path, out: Path):
    from edgebert.errors import TargetUnavailable
    from edgebert.export import export
    from edgebert.targets import get_exporter

    try:
        get_exporter("tfjs").check_available()
    except TargetUnavailable as exc:
        pytest.skip(f"tfjs toolchain unavailable: {exc}")
    return export("tfjs", model=model, out=out, seq_len=32, quiet=True)


def test_tfjs_export_of_ffn_pruned_model_passes_parity(bert4: Path, calibration: Path, tmp_path: Path) -> None:
    """A uniform FFN cut is just a smaller intermediate_size, which the captured graph carries."""
    src = tmp_path / "ffn"
    compress(bert4, src, prune_ffn=0.5, calibration=calibration, calibration_samples=16, seq_len=32, quiet=True)
    report = _tfjs_export(src, tmp_path / "tfjs")
    assert report.parity["passed"] and report.parity["min_cosine"] >= 0.9999


def test_tfjs_export_of_head_pruned_model_passes_parity(pruned: Path, tmp_path: Path) -> None:
    report = _tfjs_export(pruned, tmp_path / "tfjs")
    assert report.parity["passed"] and report.parity["min_cosine"] >= 0.9999
