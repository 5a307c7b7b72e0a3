"""A classifier through compress and trim keeps its head: the same class, every classifier tensor, its labels and
task in the manifest, with and without healing (which distils it from the unpruned classifier)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from model_zoo import build_bert

from edgebert.compress.compress import compress
from edgebert.compress.heal import HealConfig
from edgebert.modelio import load_for_rewrite, load_model
from edgebert.families import BERT

ID2LABEL = {0: "negative", 1: "neutral", 2: "positive"}


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bert(tmp_path_factory.mktemp("cls") / "m", head="sequence-classification", num_labels=3, id2label=ID2LABEL, seed=2)


@pytest.fixture(scope="module")
def text(tiny_corpus: Path) -> Path:
    """Calibration, healing and trimming text."""
    return tiny_corpus


def _assert_keeps_the_head(source: Path, out: Path) -> None:
    model, _ = load_for_rewrite(out, BERT)
    original, _ = load_for_rewrite(source, BERT)
    assert type(model).__name__ == "BertForSequenceClassification" and model.config.id2label == ID2LABEL
    assert model.classifier.weight.shape == original.classifier.weight.shape
    manifest = json.loads((out / "edgebert.json").read_text())
    assert manifest["task"] == "text-classification", manifest["task"]
    assert manifest["outputs"][0]["name"] == "logits" and manifest["outputs"][0]["labels"] == list(ID2LABEL.values())
    assert json.loads((out / "config.json").read_text())["architectures"] == ["BertForSequenceClassification"]
    loaded = load_model(out, task="text-classification")  # what export and bench load
    assert loaded.task == "text-classification"


def test_pruning_a_classifier_keeps_its_head(classifier: Path, text: Path, tmp_path: Path) -> None:
    out = tmp_path / "pruned"
    compress(classifier, out, prune_heads=0.25, prune_ffn=0.25, calibration=text, calibration_samples=32, seq_len=32, quiet=True)
    _assert_keeps_the_head(classifier, out)
    pruned, _ = load_for_rewrite(out, BERT)
    original, _ = load_for_rewrite(classifier, BERT)
    assert torch.equal(pruned.classifier.weight, original.classifier.weight)  # pruning never touches the head
    assert pruned.config.intermediate_size < original.config.intermediate_size


def test_healing_a_pruned_classifier_distils_it_from_the_unpruned_one(classifier: Path, text: Path, tmp_path: Path) -> None:
    out = tmp_path / "healed"
    heal = HealConfig(steps=6, corpus=[str(text)], lr=1e-3, batch_size=8, cache_dir=str(tmp_path / "cache"))
    report = compress(classifier, out, prune_heads=0.25, prune_ffn=0.25, calibration=text, calibration_samples=32, seq_len=32, heal=heal, quiet=True)
    _assert_keeps_the_head(classifier, out)
    assert report.manifest["healing"]["steps"] == 6


def test_trimming_a_classifiers_vocabulary_keeps_its_head(classifier: Path, text: Path, tmp_path: Path) -> None:
    from edgebert.compress.vocab import trim_vocab

    out = tmp_path / "trimmed"
    trim_vocab(classifier, out, [str(text)], min_count=1, quiet=True)
    _assert_keeps_the_head(classifier, out)
    trimmed, _ = load_for_rewrite(out, BERT)
    original, _ = load_for_rewrite(classifier, BERT)
    assert torch.equal(trimmed.classifier.weight, original.classifier.weight)
    assert json.loads((out / "edgebert.json").read_text())["vocab_trim"]["vocab_size"]["after"] == trimmed.config.vocab_size
