"""Every family through distill and compress (tiny zoo models), ALBERT as published (one layer shared by all passes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from edgebert.errors import UserError
from model_zoo import BUILDERS, build_albert, training_lines

STEPS = dict(steps=3, batch_size=4, seq_len=24, head_steps=2, quiet=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(training_lines(120, seed=3)) + "\n")
    return path


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("zoo")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def albert4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Published ALBERT layout: one layer (num_hidden_groups 1) run for 4 passes."""
    directory = build_albert(tmp_path_factory.mktemp("albert4") / "albert")
    config = json.loads((directory / "config.json").read_text())
    config["num_hidden_layers"] = 4
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def _hidden(model_dir: Path, texts: list[str]) -> torch.Tensor:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    batch = AutoTokenizer.from_pretrained(model_dir)(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).last_hidden_state
