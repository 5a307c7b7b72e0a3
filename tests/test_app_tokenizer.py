"""The bench's app-path tokenization: the Rust tokenizer called directly gives transformers' arrays, falls back to
transformers' call when it would not, and a runtime whose own tokenizer disagrees with Python is reported."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from edgebert import buckets
from edgebert.bench.app_tokenizer import RUST, TRANSFORMERS, AppTokenizer
from edgebert.parity import encode
from edgebert.targets.base import Runner

TEXTS = [
    "Hello world.",
    "where is my phone charger?",
    "Ünïcödé café, ΣΟΦΟΣ and naïve résumés",
    " ".join(["a very long note about the weather"] * 8),  # truncated to the max length
]


def _transformers(tokenizer: Any, texts: list[str]) -> list[dict[str, np.ndarray]]:
    """transformers' arrays per text at max length 16: what the bench checks the app's tokenizer against."""
    return [encode(tokenizer, [t], 16, pad_to_seq_len=False) for t in texts]


def _tokenizer(family: str, directory: Path) -> Any:
    import model_zoo

    if family == "bert":
        return model_zoo._wordpiece(directory, "BertTokenizerFast")
    return getattr(model_zoo, f"{family}_tokenizer")(directory)


@pytest.mark.parametrize("family", ["bert", "roberta", "albert"])
def test_rust_tokenizer_gives_transformers_arrays(family: str, tmp_path: Path) -> None:
    tokenizer = _tokenizer(family, tmp_path)
    app = AppTokenizer(tokenizer, 16)
    assert app.name == RUST and app.check(TEXTS, _transformers(tokenizer, TEXTS)) is None
    for text in TEXTS:
        ours, theirs = app(text), encode(tokenizer, [text], 16, pad_to_seq_len=False)
        assert sorted(ours) == sorted(theirs)
        for key in theirs:
            assert ours[key].dtype == np.int64 and np.array_equal(ours[key], theirs[key]), (family, text, key)
    tokenizer.backend_tokenizer.no_truncation()  # transformers' calls set their backend's state; ours is a copy
    assert app(TEXTS[-1])["input_ids"].shape == (1, 16)


def test_a_rust_tokenizer_that_differs_is_replaced_by_transformers(tmp_path: Path) -> None:
    tokenizer = _tokenizer("bert", tmp_path)
    app = AppTokenizer(tokenizer, 16)
    app.rust.enable_truncation(8)  # now cuts long texts shorter than transformers' call does
    longer = [t for t in TEXTS if len(tokenizer(t)["input_ids"]) > 8]
    assert longer and app.check(TEXTS, _transformers(tokenizer, TEXTS)) == longer[0]
    assert app.name == TRANSFORMERS and app(TEXTS[-1])["input_ids"].shape == (1, 16)
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy  # pure Python (transformers 5)

    slow_tokenizer = BertTokenizerLegacy(vocab_file=str(tmp_path / "vocab.txt"))
    slow = AppTokenizer(slow_tokenizer, 16)
    assert slow.name == TRANSFORMERS and slow.check(TEXTS, _transformers(slow_tokenizer, TEXTS)) is None and slow(TEXTS[0])["input_ids"].shape[0] == 1


class _RuntimeTokenizes(Runner):
    """A runtime with a tokenizer of its own that gets one text's ids wrong."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise AssertionError("a runtime that tokenizes times whole texts; run() is not called")

    def time_texts(self, texts: list[str], runs: list[tuple[str, list[int]]], warmup: int) -> dict[str, Any]:
        ids = [encode(self.tokenizer, [t], 32, pad_to_seq_len=False)["input_ids"][0].tolist() for t in texts]
        ids[1] = ids[1][:-1]
        modes = list(dict.fromkeys(mode for mode, _ in runs))
        assert sorted(i for mode, indices in runs if mode == modes[0] for i in indices) == list(range(len(texts)))
        times = {m: {"tokenize_s": [1e-5] * len(texts), "model_s": [1e-3 * (i + 1)] * len(texts)} for i, m in enumerate(modes)}
        return {"tokenizer": "the runtime's own", "ids": ids, "times": times}


def test_a_runtime_tokenizer_that_differs_from_python_is_reported(tmp_path: Path) -> None:
    from edgebert.bench.app_latency import measure_app_latency
    from edgebert.bench.report import app_latency_table

    tokenizer = _tokenizer("bert", tmp_path)
    item = SimpleNamespace(tokenizer=tokenizer, buckets=(16, 32), runs_out_of_process=True,
                           pad_length=lambda n: buckets.pick(n, (16, 32)))  # fmt: skip
    result = measure_app_latency(item, _RuntimeTokenizes(tokenizer), TEXTS, "texts", 128)  # type: ignore[arg-type]
    assert result["tokenizer"] == "the runtime's own" and result["max_length"] == 32
    assert result["ids_differ"] == {"texts": 1, "first": TEXTS[1]}
    assert set(result["modes"]) == {"fixed", "buckets"} and result["modes"]["buckets"]["model_ms"]["median"] == 2.0
    table = "\n".join(app_latency_table({"items": [{"label": "x", "app_latency": result}]}))
    assert "tokenized by the runtime's own" in table and "other ids than Python's on 1 of 4 texts" in table
