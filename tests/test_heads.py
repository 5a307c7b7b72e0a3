"""edgebert.heads: the sentence-transformers stack and task heads, against the libraries' own computation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgebert import heads
from edgebert.errors import UserError

SENTENCES = ["a man plays the guitar", "the quick brown fox jumps over the lazy dog on the stage", "hello"]


def _st_model(base: Path, out: Path, modes: tuple[str, ...], dense: int | None, normalize: bool, activation: str = "Tanh"):
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer

    torch.manual_seed(1)
    modules = [Transformer(str(base)), Pooling(32, pooling_mode=modes)]
    if dense:
        modules.append(Dense(32 * len(modes), dense, activation_function=getattr(torch.nn, activation)()))
    if normalize:
        modules.append(Normalize())
    model = SentenceTransformer(modules=modules, device="cpu")
    model.save(str(out))
    return model


def _edgebert_vectors(model_dir: Path, texts: list[str]) -> np.ndarray:
    import torch
    from transformers import AutoModel, AutoTokenizer

    stack = heads.read_sentence_stack(model_dir)
    assert stack is not None
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    encoder = AutoModel.from_pretrained(model_dir).eval()
    head = heads.torch_sentence_head(stack).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = encoder(**batch).last_hidden_state
        return head(hidden, batch["attention_mask"]).numpy()


@pytest.mark.parametrize(
    ("modes", "dense", "normalize"),
    [
        (("cls",), None, True),
        (("max",), None, True),
        (("mean_sqrt_len_tokens",), None, False),
        (("weightedmean",), None, True),
        (("lasttoken",), None, True),
        (("cls", "mean"), 16, True),
        (("mean",), 16, False),
    ],
)
def test_torch_stack_matches_sentence_transformers_encode(tiny_bert: Path, tmp_path: Path, modes, dense, normalize) -> None:
    st = _st_model(tiny_bert, tmp_path / "st", modes, dense, normalize)
    expected = st.encode(SENTENCES, convert_to_numpy=True)
    got = _edgebert_vectors(tmp_path / "st", SENTENCES)
    assert got.shape == expected.shape == (3, dense or 32 * len(modes))
    np.testing.assert_allclose(got, expected, atol=2e-5)


def test_numpy_stack_matches_torch(tiny_bert: Path, tmp_path: Path) -> None:
    import torch

    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(2, 7, 32)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]], dtype=np.int64)
    dense = heads.DenseLayer(rng.normal(size=(8, 32 * 6)).astype(np.float32), rng.normal(size=8).astype(np.float32), "gelu")
    stack = heads.SentenceStack(heads.POOLING_MODES, (dense,), True)
    expected = heads.torch_sentence_head(stack)(torch.from_numpy(hidden), torch.from_numpy(mask)).detach().numpy()
    np.testing.assert_allclose(heads.numpy_sentence_vector(stack, hidden, mask), expected, atol=1e-5)


def test_legacy_pooling_config_is_read(tmp_path: Path) -> None:
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]))
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}
    ))
    stack = heads.read_sentence_stack(tmp_path)
    assert stack is not None and stack.pooling == ("cls", "mean") and stack.normalize and not stack.dense
    assert stack.dim(32) == 64


@pytest.mark.parametrize("module_type", ["sentence_transformers.models.LSTM", "sentence_transformers.models.WordWeights"])
def test_unknown_module_is_refused_by_name(tmp_path: Path, module_type: str) -> None:
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_X", "type": module_type},
    ]))
    with pytest.raises(UserError, match=module_type.rsplit(".", 1)[-1]):
        heads.read_sentence_stack(tmp_path)


def test_unsupported_dense_activation_is_refused(tiny_bert: Path, tmp_path: Path) -> None:
    _st_model(tiny_bert, tmp_path / "st", ("mean",), 16, True, activation="Softplus")
    with pytest.raises(UserError, match="Softplus"):
        heads.read_sentence_stack(tmp_path / "st")


def test_default_prompt_is_recorded(tiny_bert: Path, tmp_path: Path) -> None:
    _st_model(tiny_bert, tmp_path / "st", ("mean",), None, True)
    config_file = tmp_path / "st" / "config_sentence_transformers.json"
    config = json.loads(config_file.read_text())
    config.update(prompts={"query": "query: ", "document": ""}, default_prompt_name="query")
    config_file.write_text(json.dumps(config))
    stack = heads.read_sentence_stack(tmp_path / "st")
    assert stack is not None and stack.describe()["default_prompt"] == {"name": "query", "text": "query: "}


def test_detect_task_from_architectures() -> None:
    assert heads.detect_task({"architectures": ["BertForSequenceClassification"]}, False) == "text-classification"
    assert heads.detect_task({"architectures": ["RobertaForMaskedLM"]}, False) == "fill-mask"
    assert heads.detect_task({"architectures": ["BertForTokenClassification"]}, False) == "token-classification"
    assert heads.detect_task({"architectures": ["BertModel"]}, False) == "feature-extraction"
    assert heads.detect_task({"architectures": ["BertForMaskedLM"]}, True) == "feature-extraction"
    with pytest.raises(UserError, match="question"):
        heads.check_task("question-answering")


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("mode", heads.POOLING_MODES)
def test_pooling_is_sentence_transformers_on_either_padding_side(mode: str, side: str) -> None:
    """cls (the first unmasked token), lasttoken (the last) and weightedmean (weights from the first unmasked token)
    depend on where the pads are: a left-padded tokenizer (XLNet's) pools as sentence-transformers 6 does, in torch
    and in numpy."""
    import torch
    from sentence_transformers.sentence_transformer.modules import Pooling

    hidden = torch.randn(3, 6, 4, generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([6, 3, 1])
    ones = torch.arange(6)[None, :] < lengths[:, None]
    mask = (ones if side == "right" else ones.flip(1)).to(torch.int64)
    theirs = Pooling(4, pooling_mode=mode)({"token_embeddings": hidden, "attention_mask": mask})["sentence_embedding"]
    assert torch.allclose(heads.torch_pool(hidden, mask, mode), theirs, atol=1e-6)
    stack = heads.SentenceStack(pooling=(mode,), normalize=False)
    assert np.allclose(heads.numpy_sentence_vector(stack, hidden.numpy(), mask.numpy()), theirs.numpy(), atol=1e-6)
