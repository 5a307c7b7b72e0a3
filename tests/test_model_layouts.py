"""Model directories from both transformers lines work in every verb: one saved by transformers 5 (`tokenizer.json`
only) and the same model laid out as transformers 4 saved it (`vocab.txt`, `special_tokens_map.json`, no
`tokenizer.json`). Both tokenize alike and every verb runs on each."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from model_zoo import as_transformers4_layout, build_bert

from edgebert.modelio import load_model

TEXTS = ["A man is playing a guitar.", "WHY is everyone shouting?", "the quick brown fox"]


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("layouts")
    five = build_bert(root / "transformers-5")
    (five / "vocab.txt").unlink()  # model_zoo keeps the file it built the tokenizer from; transformers 5 writes none
    return {"transformers-5": five, "transformers-4": as_transformers4_layout(five, root / "transformers-4")}


def test_the_two_layouts_are_what_each_line_writes(layouts: dict[str, Path]) -> None:
    five, four = layouts["transformers-5"], layouts["transformers-4"]
    assert (five / "tokenizer.json").exists() and not (five / "vocab.txt").exists()
    assert json.loads((five / "tokenizer_config.json").read_text()).get("backend") == "tokenizers"
    assert (four / "vocab.txt").exists() and (four / "special_tokens_map.json").exists() and not (four / "tokenizer.json").exists()


def test_both_layouts_tokenize_and_embed_alike(layouts: dict[str, Path]) -> None:
    import torch

    from edgebert.parity import encode

    loaded = {name: load_model(path) for name, path in layouts.items()}
    batches = {name: encode(m.tokenizer, TEXTS, 16, pad_to_seq_len=True) for name, m in loaded.items()}
    for key in batches["transformers-5"]:
        np.testing.assert_array_equal(batches["transformers-5"][key], batches["transformers-4"][key])
    with torch.no_grad():
        vectors = {n: m.embedder(*[torch.from_numpy(batches[n][i]) for i in m.family.input_names()])[0] for n, m in loaded.items()}
    assert torch.equal(vectors["transformers-5"], vectors["transformers-4"])
    assert len(set(batches["transformers-5"]["input_ids"][:, 1].tolist())) == 3  # real words, not [UNK]


@pytest.mark.parametrize("layout", ["transformers-5", "transformers-4"])
def test_every_verb_runs_on_the_layout(layouts: dict[str, Path], tmp_path: Path, tiny_corpus: Path, layout: str) -> None:
    from edgebert import bench, compress, distill, export

    model = layouts[layout]
    student = tmp_path / "student"
    distill(model, tiny_corpus, student, student_layers=1, steps=2, batch_size=4, seq_len=16, save_steps=2, quiet=True, cache_dir=tmp_path / "c")
    pruned = tmp_path / "pruned"
    compress(model, pruned, heads_to_prune='{"0": [1]}', quiet=True)
    report = export("onnx", model=pruned, out=tmp_path / "onnx", seq_len=16, quiet=True)
    assert report.parity["passed"] and report.parity["min_cosine"] >= 0.9999
    result = bench([f"student={student}", f"onnx={tmp_path / 'onnx'}"], tmp_path / "bench", seq_len=8, repeats=1, warmup=0, quiet=True)
    assert all(item["status"] == "ok" for item in result.report["items"]), result.report["items"]
