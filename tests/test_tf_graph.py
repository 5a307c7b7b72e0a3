"""The model's own graph in TensorFlow: capture (torch.export) and the TensorFlow ops of every ATen op it uses,
checked against PyTorch for every family, task head and pooling mode (TF.js and the TFLite fallback build on it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import model_zoo
from edgebert.modelio import load_model
from edgebert.targets.tf_graph import dense_only_params
from edgebert.targets.torch_graph import GRAPH_FILE, PASS_THROUGH, UnsupportedGraph, capture

LENGTH = 12
# (family, saved head, export task, sentence-transformers pooling): each family once, each head once, every pooling.
CASES = [
    ("bert", None, None, None), ("distilbert", None, None, None), ("electra", None, None, None),
    ("roberta", None, None, None), ("albert", None, None, None), ("mpnet", None, None, None),
    ("mpnet", "sequence-classification", "text-classification", None), ("modernbert", None, None, None),
    ("modernbert", "sequence-classification", "text-classification", None), ("deberta_v2", None, None, None),
    ("deberta_v2", "sequence-classification", "text-classification", None), ("xlnet", "sequence-classification", "text-classification", None),
    ("bert", "sequence-classification", "text-classification", None),
    ("roberta", "token-classification", "token-classification", None),
    ("roberta", "fill-mask", "fill-mask", None),
    ("bert", None, None, "cls"), ("bert", None, None, "max"), ("bert", None, None, "weightedmean"),
    ("bert", None, None, "lasttoken"), ("distilbert", None, None, "mean_sqrt_len_tokens"),
]  # fmt: skip
# Runs in a TensorFlow process: every case's graph, eagerly, with the TF.js forms and with the plain ones.
SCRIPT = """
import json, sys
import numpy as np
from edgebert.targets.tf_graph import lookup_only_params, param_shapes, read_graph_ir, run_graph
from edgebert.targets.tf_ops import Forms
cases = json.loads(open(sys.argv[1]).read())
for case in cases:
    feeds = dict(np.load(case["feeds"]))
    coded = frozenset(lookup_only_params(read_graph_ir(case["graph"]), 64, param_shapes(case["graph"])))
    tfjs = Forms(gather_rows=True, per_head=True, arithmetic_masks=True)
    rowcoded = Forms(gather_rows=True, per_head=True, arithmetic_masks=True, row_coded_tables=coded)
    for label, forms in (("tfjs", tfjs), ("plain", Forms(gelu="tf")), ("rowcoded", rowcoded)):
        out = run_graph(case["graph"], case["length"], feeds, forms)
        np.savez(case["out"] + "-" + label + ".npz", **out)
"""


def _case_model(root: Path, family: str, head: str | None, pooling: str | None) -> Path:
    directory = getattr(model_zoo, f"build_{family}")(root / f"{family}-{head}-{pooling}", head=head)
    if pooling:
        model_zoo.add_st_stack(directory, pooling=pooling, dense_out=16)
    return directory


def _feeds(loaded, length: int) -> dict[str, np.ndarray]:
    encoded = loaded.tokenizer(["the cat sat on the mat"], padding="max_length", max_length=length, truncation=True, return_tensors="np")
    return {n: encoded[n].astype(np.int32) if n in encoded else np.zeros((1, length), np.int32) for n in loaded.family.input_names()}


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """Each case captured once, with its feeds and PyTorch's outputs."""
    root = tmp_path_factory.mktemp("graphs")
    cases = []
    for index, (family, head, task, pooling) in enumerate(CASES):
        loaded = load_model(_case_model(root, family, head, pooling), task=task)
        feeds = _feeds(loaded, LENGTH)
        graph = root / f"graph-{index}"
        summary = capture(loaded.embedder, loaded.family.input_names(), list(loaded.output_names), [LENGTH], graph)
        with torch.no_grad():
            expected = loaded.embedder(*[torch.from_numpy(feeds[n]).long() for n in loaded.family.input_names()])
        np.savez(root / f"feeds-{index}.npz", **feeds)
        cases.append({
            "id": f"{family}-{head or task or 'base'}-{pooling or 'default'}", "graph": str(graph), "length": LENGTH,
            "feeds": str(root / f"feeds-{index}.npz"), "out": str(root / f"out-{index}"), "summary": summary,
            "expected": {n: t.numpy() for n, t in zip(loaded.output_names, expected)},
        })  # fmt: skip
    return cases


def test_capture_names_parameters_by_key_and_folds_constants(captured: list[dict]) -> None:
    bert = captured[0]
    graph = json.loads((Path(bert["graph"]) / GRAPH_FILE).read_text())
    ops = {n["op"] for n in graph["graphs"][str(LENGTH)]["nodes"]}
    assert "aten.linear.default" in ops and not ops & PASS_THROUGH
    assert "aten.arange.default" not in ops  # position ranges are computed once, at capture
    refs = json.dumps(graph)
    assert '"param:encoder.encoder.layer.0.output.dense.weight"' in refs
    assert list(graph["graphs"][str(LENGTH)]["outputs"]) == ["sentence_embedding", "last_hidden_state"]


def test_tensorflow_graph_computes_what_pytorch_computes(captured: list[dict], tmp_path: Path) -> None:
    """Every case, both forms: the same outputs (fill-mask: the same top ids; scores and vectors within float error)."""
    from edgebert.targets.tf_subprocess import child_env

    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps([{k: c[k] for k in ("graph", "length", "feeds", "out")} for c in captured]))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(spec)], env=child_env(tensorflow=True), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for case in captured:
        _row_coded_lookups_stay_close(case)
        for label in ("tfjs", "plain"):
            got = np.load(case["out"] + f"-{label}.npz")
            assert sorted(got.files) == sorted(case["expected"]), case["id"]
            for name, expected in case["expected"].items():
                if name == "top_ids":
                    np.testing.assert_array_equal(got[name], expected.astype(np.int32), err_msg=case["id"])
                else:
                    np.testing.assert_allclose(got[name], expected, atol=2e-5, err_msg=f"{case['id']} {label} {name}")


def _row_coded_lookups_stay_close(case: dict) -> None:
    """The word table as per-row uint8 codes (the TF.js uint8 recipe) moves every output only by 8-bit rounding."""
    got = np.load(case["out"] + "-rowcoded.npz")
    for name, expected in case["expected"].items():
        if name == "top_ids":
            continue
        a, b = got[name].reshape(-1).astype(np.float64), expected.reshape(-1).astype(np.float64)
        cosine = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        assert cosine > 0.999, f"{case['id']} rowcoded {name}: cosine {cosine}"


def test_row_codes_keep_each_row_within_half_a_step_of_its_own_range() -> None:
    from edgebert.targets.tf_graph import row_codes

    rng = np.random.default_rng(0)
    table = rng.normal(size=(50, 16)).astype(np.float32) * rng.uniform(0.01, 2.0, size=(50, 1)).astype(np.float32)
    table[7] = 0.25  # a constant row
    codes, scale, offset = row_codes(table)
    assert codes.dtype == np.float32 and np.array_equal(codes, np.rint(codes)) and codes.min() == 0 and codes.max() == 255
    assert (np.abs(codes * scale + offset - table) <= scale / 2 + 1e-6).all()
    assert np.allclose(codes[7] * scale[7] + offset[7], 0.25)
    assert scale.max() > 10 * scale.min()  # one scale per row, not per table


def test_only_tables_that_are_looked_up_alone_are_row_coded(captured: list[dict]) -> None:
    from edgebert.targets.tf_graph import lookup_only_params, param_shapes, read_graph_ir

    bert, fill_mask = captured[0], next(c for c in captured if c["id"].startswith("roberta-fill-mask"))
    word, shapes = "encoder.embeddings.word_embeddings.weight", param_shapes(bert["graph"])
    assert word in lookup_only_params(read_graph_ir(bert["graph"]), 64, shapes)  # position tables too, at 64 rows
    assert lookup_only_params(read_graph_ir(bert["graph"]), shapes[word][0], shapes) == {word}
    # the fill-mask model's word table is its decoder too: a product reads it, so it stays one plain tensor
    assert not any("word_embeddings" in k for k in lookup_only_params(read_graph_ir(fill_mask["graph"]), 64, param_shapes(fill_mask["graph"])))


def test_tied_decoder_is_one_tensor_used_both_ways(captured: list[dict]) -> None:
    """A fill-mask head whose decoder is the word table: stored once (not transposed), Dense-only weights transposed."""
    fill_mask = next(c for c in captured if c["id"].startswith("roberta-fill-mask"))
    graph = json.loads((Path(fill_mask["graph"]) / GRAPH_FILE).read_text())
    transposed = dense_only_params(graph)
    assert "model.roberta.encoder.layer.0.output.dense.weight" in transposed
    tied = [k for k in ("model.lm_head.decoder.weight", "model.roberta.embeddings.word_embeddings.weight") if f'"param:{k}"' in json.dumps(graph)]
    assert len(tied) == 1 and tied[0] not in transposed


def test_an_op_without_a_tensorflow_form_is_refused_by_name(tmp_path: Path) -> None:
    from edgebert.targets.tf_graph import interpret
    from edgebert.targets.tf_ops import Forms, UnsupportedOp

    graph = {"nodes": [{"name": "fft", "op": "aten.fft_fft.default", "args": [{"ref": "input_ids"}], "kwargs": {}, "shape": [1, 4], "dtype": "float32"}],
             "outputs": {"y": {"ref": "fft"}}}  # fmt: skip
    with pytest.raises(UnsupportedOp, match="aten.fft_fft.default"):
        interpret(None, graph, {}, None, {"input_ids": None}, Forms())


def test_a_module_whose_outputs_do_not_match_the_names_is_refused(tmp_path: Path) -> None:
    class Two(torch.nn.Module):
        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return input_ids.float() * 2, attention_mask.float()

    with pytest.raises(UnsupportedGraph, match="returns 2 outputs"):
        capture(Two(), ["input_ids", "attention_mask"], ["only"], [4], tmp_path / "g")


def test_nodes_that_read_no_input_are_scoped_static_when_they_hold_floats() -> None:
    """What the converter folds into a constant (position rows, rotary tables) is named under `STATIC_SCOPE`, which the
    TF.js uint8 recipe keeps float16; scalars and integer tensors keep their own names (uint8 stores a scalar exactly)."""
    from edgebert.targets.tf_graph import STATIC_SCOPE, _scope

    rows = {"name": "embedding_2", "shape": [1, 12, 32], "dtype": "float32"}
    assert _scope(rows, static=True) == f"{STATIC_SCOPE}/embedding_2"
    assert _scope(rows, static=False) == "embedding_2"  # computed from an input: an activation of the call
    assert _scope({"name": "_tensor_constant0", "shape": [], "dtype": "float32"}, static=True) == "tensor_constant0"
    assert _scope({"name": "arange", "shape": [12], "dtype": "int64"}, static=True) == "arange"
