"""Model resolution and safe loading: local dirs, hub ids (offline here), the packaged default."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from edgebert.errors import UserError
from edgebert.modelio import inspect_model_dir, load_model
from edgebert.sources import resolve_model


def test_local_dir_resolves_to_itself(tiny_bert: Path) -> None:
    assert resolve_model(str(tiny_bert)) == tiny_bert


def test_missing_local_path_is_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        resolve_model(str(tmp_path / "nope"))


def test_hub_id_offline_is_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="could not download 'bert-base-uncased'"):
        resolve_model("bert-base-uncased")


def test_default_is_the_packaged_teacher() -> None:
    path = resolve_model(None)
    assert path.name == "model" and (path / "model.safetensors").exists()
    assert json.loads((path / "config.json").read_text())["hidden_size"] == 384


def test_load_tiny_bert(tiny_bert: Path) -> None:
    model = load_model(tiny_bert)
    assert model.family.name == "bert" and model.pooling == "mean"
    assert model.family.input_names() == ["input_ids", "attention_mask", "token_type_ids"]


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_not_a_model_dir(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no config.json"):
        inspect_model_dir(tmp_path)


def test_no_tokenizer(tiny_bert: Path, tmp_path: Path) -> None:
    d = _copy(tiny_bert, tmp_path / "m")
    for name in ("vocab.txt", "tokenizer.json"):
        (d / name).unlink()
    with pytest.raises(UserError, match="no tokenizer"):
        inspect_model_dir(d)


def test_no_weights(tiny_bert: Path, tmp_path: Path) -> None:
    d = _copy(tiny_bert, tmp_path / "m")
    (d / "model.safetensors").unlink()
    with pytest.raises(UserError, match="no weights"):
        inspect_model_dir(d)


def test_truncated_weights(tiny_bert: Path, tmp_path: Path) -> None:
    d = _copy(tiny_bert, tmp_path / "m")
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="truncated or corrupt"):
        load_model(d)


def test_unsupported_architecture(tiny_bert: Path, tmp_path: Path) -> None:
    d = _copy(tiny_bert, tmp_path / "m")
    config = json.loads((d / "config.json").read_text())
    config["model_type"] = "gpt2"
    (d / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match="supported: bert"):
        inspect_model_dir(d)


@pytest.mark.parametrize("spec", [7, 1.5, ["a"], b"dir"])
def test_model_of_the_wrong_type_is_a_user_error(spec: object) -> None:
    from edgebert.errors import UserError
    from edgebert.sources import resolve_model

    with pytest.raises(UserError, match="a model must be a directory, a hub id or 'default'"):
        resolve_model(spec)  # type: ignore[arg-type]
