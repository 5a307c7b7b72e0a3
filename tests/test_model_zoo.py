"""The model zoo's directories load in their own libraries (transformers Auto classes, SentenceTransformer) as built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_zoo import (
    BUILDERS,
    HEADS_BY_TASK,
    add_st_stack,
    build_albert,
    build_bert,
    build_electra,
    build_roberta,
)

TEXTS = ["hello world", "A man plays the guitar on stage, why is everyone shouting?"]
SENTIMENT = {0: "negative", 1: "positive"}


def _forward(directory: Path, head: str | None):
    """(model, tokenizer, output) of the head's Auto class on TEXTS, padded as one batch."""
    import torch
    import transformers

    model = getattr(transformers, HEADS_BY_TASK[head]).from_pretrained(directory).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    with torch.no_grad():
        output = model(**tokenizer(TEXTS, padding=True, return_tensors="pt"))
    return model, tokenizer, output


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str | None], Path]:
    """Every family with every head, built once for this module."""
    root = tmp_path_factory.mktemp("zoo")
    return {(family, head): build(root / f"{family}-{head}", head=head)
            for family, build in BUILDERS.items() for head in HEADS_BY_TASK}


@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_each_family_and_head_loads_with_its_auto_class(zoo: dict, family: str) -> None:
    for head in HEADS_BY_TASK:
        model, tokenizer, output = _forward(zoo[family, head], head)
        assert model.config.model_type == family
        assert (model.config.hidden_size, model.config.num_hidden_layers) == (32, 2), (family, head)
        batch, seq = tokenizer(TEXTS, padding=True, return_tensors="pt")["input_ids"].shape
        if head is None:
            assert tuple(output.last_hidden_state.shape) == (batch, seq, 32)
        elif head == "sequence-classification":
            assert tuple(output.logits.shape) == (batch, 3)
        elif head == "token-classification":
            assert tuple(output.logits.shape) == (batch, seq, 3)
        else:
            assert tuple(output.logits.shape) == (batch, seq, len(tokenizer))
        assert model.config.architectures == [type(model).__name__]


def test_labels_are_saved_in_the_config(tmp_path: Path) -> None:
    from transformers import AutoConfig

    build_bert(tmp_path / "sst", head="sequence-classification", id2label=SENTIMENT)
    config = AutoConfig.from_pretrained(tmp_path / "sst")
    assert config.id2label == SENTIMENT and config.label2id == {"negative": 0, "positive": 1}
    assert config.num_labels == 2


def test_builds_are_deterministic(tmp_path: Path) -> None:
    for name in ("a", "b"):
        build_roberta(tmp_path / name, head="fill-mask")
    for file in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file


def test_albert_is_layer_shared(zoo: dict) -> None:
    from transformers import AutoModel

    model = AutoModel.from_pretrained(zoo["albert", None])
    assert model.config.num_hidden_groups == 1 and model.config.num_hidden_layers == 2
    assert len(model.encoder.albert_layer_groups) == 1
    assert not any("albert_layer_groups.1" in name for name in model.state_dict())


def test_albert_can_be_built_unshared(tmp_path: Path) -> None:
    from transformers import AutoModel

    model = AutoModel.from_pretrained(build_albert(tmp_path / "two", num_hidden_groups=2))
    assert len(model.encoder.albert_layer_groups) == 2


def test_electra_has_embeddings_project(zoo: dict, tmp_path: Path) -> None:
    from transformers import AutoModel

    model = AutoModel.from_pretrained(zoo["electra", None])
    assert (model.embeddings_project.in_features, model.embeddings_project.out_features) == (16, 32)
    same = AutoModel.from_pretrained(build_electra(tmp_path / "e32", embedding_size=32))
    assert not hasattr(same, "embeddings_project")


def test_roberta_tokenizer_is_byte_level_bpe(zoo: dict) -> None:
    from transformers import AutoConfig, AutoTokenizer

    directory = zoo["roberta", None]
    tokenizer = AutoTokenizer.from_pretrained(directory)
    assert type(tokenizer).__name__ == "RobertaTokenizer"  # transformers 5: the fast (Rust) class
    spec = json.loads((directory / "tokenizer.json").read_text())
    assert spec["model"]["type"] == "BPE" and spec["pre_tokenizer"]["type"] == "ByteLevel"
    ids = tokenizer("Hello émoji 🙂")["input_ids"]
    assert ids[0] == tokenizer.bos_token_id and ids[-1] == tokenizer.eos_token_id
    assert tokenizer.unk_token_id not in ids, "byte-level BPE has no unknown token"
    assert tokenizer.decode(ids, skip_special_tokens=True) == "Hello émoji 🙂"
    config = AutoConfig.from_pretrained(directory)
    assert config.pad_token_id == tokenizer.pad_token_id == 1 and config.max_position_embeddings == 130


def test_albert_tokenizer_is_unigram_without_spiece(zoo: dict) -> None:
    from transformers import AutoTokenizer

    directory = zoo["albert", None]
    tokenizer = AutoTokenizer.from_pretrained(directory)
    assert type(tokenizer).__name__ == "AlbertTokenizer" and not (directory / "spiece.model").exists()
    assert json.loads((directory / "tokenizer.json").read_text())["model"]["type"] == "Unigram"
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("Hello World")["input_ids"])
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and tokens[1].startswith("▁")


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "mean_sqrt_len", "weightedmean", "lasttoken"])
def test_st_stack_pooling_modes(zoo: dict, tmp_path: Path, pooling: str) -> None:
    import shutil

    import numpy as np
    from sentence_transformers import SentenceTransformer

    directory = shutil.copytree(zoo["bert", None], tmp_path / "st")
    add_st_stack(directory, pooling=pooling, normalize=False)
    pooling_config = json.loads((directory / "1_Pooling" / "config.json").read_text())
    assert pooling_config["pooling_mode"] == ("mean_sqrt_len_tokens" if pooling == "mean_sqrt_len" else pooling)
    assert [m["path"] for m in json.loads((directory / "modules.json").read_text())] == ["", "1_Pooling"]
    embeddings = SentenceTransformer(str(directory), device="cpu").encode(TEXTS)
    assert embeddings.shape == (2, 32)
    assert not np.allclose(np.linalg.norm(embeddings, axis=1), 1.0), "no Normalize was asked for"


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert"])
def test_st_stack_with_dense_and_normalize(zoo: dict, tmp_path: Path, family: str) -> None:
    import shutil

    import numpy as np
    from sentence_transformers import SentenceTransformer

    directory = shutil.copytree(zoo[family, None], tmp_path / "st")
    weights = (directory / "model.safetensors").read_bytes()
    add_st_stack(directory, pooling="cls", dense_out=16)
    assert (directory / "model.safetensors").read_bytes() == weights, "the transformer's weights are untouched"
    assert [m["path"] for m in json.loads((directory / "modules.json").read_text())] == [
        "", "1_Pooling", "2_Dense", "3_Normalize"]
    dense = json.loads((directory / "2_Dense" / "config.json").read_text())
    assert (dense["in_features"], dense["out_features"]) == (32, 16)
    assert dense["activation_function"] == "torch.nn.modules.activation.Tanh"
    embeddings = SentenceTransformer(str(directory), device="cpu").encode(TEXTS)
    assert embeddings.shape == (2, 16)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-5)


def test_st_stack_keeps_a_classifier_head(zoo: dict, tmp_path: Path) -> None:
    import shutil

    from sentence_transformers import SentenceTransformer

    directory = shutil.copytree(zoo["electra", "sequence-classification"], tmp_path / "st")
    add_st_stack(directory, pooling="mean", dense_out=8, dense_activation="torch.nn.modules.linear.Identity")
    model, _, output = _forward(directory, "sequence-classification")
    assert type(model).__name__ == "ElectraForSequenceClassification" and tuple(output.logits.shape) == (2, 3)
    assert SentenceTransformer(str(directory), device="cpu").encode(TEXTS).shape == (2, 8)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="head"):
        build_bert(tmp_path / "x", head="question-answering")
    with pytest.raises(ValueError, match="pooling"):
        add_st_stack(tmp_path / "x", pooling="median")
