"""Safe model loading (edgebert/modelio.py): safetensors first, .bin only as plain tensors, never remote code, and
one-line UserErrors for directories that are not models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from edgebert.errors import UserError
from edgebert.modelio import inspect_model_dir, load_model

WORD_TABLE = "embeddings.word_embeddings.weight"


@pytest.fixture()
def model(tiny_bert: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny BERT (tests change it)."""
    return Path(shutil.copytree(tiny_bert, tmp_path / "model"))


def _safetensors(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


def _word_table(directory: Path) -> torch.Tensor:
    return load_model(directory).embedder.encoder.state_dict()[WORD_TABLE]


def _as_bin(directory: Path, scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Write pytorch_model.bin holding the safetensors weights times `scale`; return them."""
    weights = {k: v * scale for k, v in _safetensors(directory).items()}
    torch.save(weights, directory / "pytorch_model.bin")
    return weights


def test_safetensors_win_over_pytorch_model_bin(model: Path) -> None:
    _as_bin(model, scale=2.0)  # a different .bin beside the safetensors
    assert torch.equal(_word_table(model), _safetensors(model)[WORD_TABLE])


def test_a_bin_of_plain_tensors_loads(model: Path) -> None:
    weights = _as_bin(model, scale=2.0)
    (model / "model.safetensors").unlink()
    assert torch.equal(_word_table(model), weights[WORD_TABLE])


class _Payload:
    """A pickle that runs code when loaded without weights_only: it would write `marker`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (Path(self.marker), "pwned"))  # type: ignore[return-value]


def test_a_bin_that_runs_code_is_refused(model: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    weights = _safetensors(model)
    (model / "model.safetensors").unlink()
    torch.save({**weights, "payload": _Payload(marker)}, model / "pytorch_model.bin")
    with pytest.raises(UserError, match="cannot load the weights") as info:
        load_model(model)
    assert "\n" not in str(info.value)
    assert not marker.exists()


@pytest.mark.parametrize("file", ["config.json", "tokenizer_config.json"])
def test_auto_map_is_refused_and_its_code_never_imported(model: Path, tmp_path: Path, file: str) -> None:
    """A model or tokenizer that names its own code may compute something the stock class does not (transformers 5
    would load the stock tokenizer in its place without a word): one line, and the code is never imported."""
    marker = tmp_path / "imported"
    (model / "modeling_evil.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n")
    config = json.loads((model / file).read_text())
    config["auto_map"] = {"AutoConfig": "modeling_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"}
    (model / file).write_text(json.dumps(config))
    for load in (inspect_model_dir, load_model):
        with pytest.raises(UserError, match=rf"{file} names custom code \(auto_map\), which edgebert never runs"):
            load(model)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("remove", "fragment"),
    [
        (("model.safetensors",), "has no weights (model.safetensors or pytorch_model.bin)"),
        (("vocab.txt", "tokenizer.json"), "has no tokenizer files"),
        (("config.json",), "is not a model directory (no config.json)"),
    ],
)
def test_missing_parts_are_one_line_user_errors(model: Path, remove: tuple[str, ...], fragment: str) -> None:
    for name in remove:
        (model / name).unlink(missing_ok=True)
    for load in (inspect_model_dir, load_model):
        with pytest.raises(UserError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as info:
            load(model)
        assert "\n" not in str(info.value)


def test_bad_config_is_a_one_line_user_error(model: Path) -> None:
    (model / "config.json").write_text("{not json")
    with pytest.raises(UserError, match="is not valid JSON") as info:
        inspect_model_dir(model)
    assert "\n" not in str(info.value)


def test_the_directorys_pooling_is_used_and_an_unreproducible_stack_refused(model: Path) -> None:
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    stack = [{"path": "", "type": "sentence_transformers.models.Transformer"}, {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (model / "modules.json").write_text(json.dumps(stack))
    assert load_model(model).pooling == "cls"
    (model / "modules.json").write_text(json.dumps([*stack, {"path": "2_LSTM", "type": "sentence_transformers.models.LSTM"}]))
    with pytest.raises(UserError, match="LSTM' is not one edgebert can export") as info:
        load_model(model)
    assert "\n" not in str(info.value)
