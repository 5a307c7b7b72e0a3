"""The per-family facts: lookup, layer lists, module roles that resolve on real models, export name patterns."""

from __future__ import annotations

import fnmatch

import pytest
import torch
from torch import nn

from edgebert.errors import UserError
from edgebert.families import ALBERT, BERT, FAMILIES, family_for, supported_model_types


def _tiny(family_name: str) -> nn.Module:
    from transformers import AlbertConfig, AlbertModel, BertConfig, BertModel

    torch.manual_seed(0)
    if family_name == "bert":
        return BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=32))
    return AlbertModel(AlbertConfig(
        vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=3, inner_group_num=1,
        num_attention_heads=2, intermediate_size=32,
    ))  # fmt: skip


def _get(module: nn.Module, path: str) -> nn.Module:
    for name in path.split("."):
        module = getattr(module, name)
    return module


def test_lookup_and_unknown_types() -> None:
    assert family_for("bert") is BERT and family_for("albert") is ALBERT
    assert {"bert", "albert"} <= set(supported_model_types())
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    with pytest.raises(UserError, match="not supported yet; supported: bert, albert"):
        family_for("gpt2")


@pytest.mark.parametrize("family", [BERT, ALBERT], ids=lambda f: f.name)
def test_module_roles_resolve_on_a_real_model(family) -> None:
    model = _tiny(family.name)
    layers = family.layers(model)
    assert len(layers) == 3 and len({id(layer) for layer in layers}) == 3
    shapes = {}
    for role, _ in family.layer_modules:
        module = _get(layers[1], family.layer_module(role))
        assert isinstance(module, (nn.Linear, nn.LayerNorm)), role
        shapes[role] = tuple(module.weight.shape)
    assert shapes["ffn_input"] == (32, 16) and shapes["ffn_output"] == (16, 32) and shapes["query"] == (16, 16)
    assert family.layer_module("ffn_output") == family.ffn_output_module
    assert family.layer_module("attention_output") == family.attention_output_module
    for role, path in family.embedding_modules:
        assert isinstance(_get(model, path), (nn.Embedding, nn.LayerNorm, nn.Linear)), role
    assert (family.embedding_module("projection") is not None) == (family.embedding_size_field is not None)
    assert family.input_names() == ["input_ids", "attention_mask", "token_type_ids"]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_mlm_classes_match_the_fields(family) -> None:
    """The masked-LM class and every field that names something inside it (or mirrors its base model) resolve."""
    import transformers

    base_model = _tiny(family.name)
    mlm = getattr(transformers, family.mlm_class)(base_model.config)
    base = getattr(mlm, family.mlm_base_attr)
    assert type(base) is type(base_model) and len(family.layers(base)) == 3
    assert isinstance(getattr(mlm, family.mlm_head_prefix), nn.Module)
    names = dict(mlm.named_parameters())
    head = [n for n in mlm.state_dict() if not n.startswith(family.mlm_base_attr + ".")]
    assert head and all(n.startswith(family.mlm_head_prefix + ".") for n in head), head
    assert family.mlm_bias_key in names
    for prefix in family.mlm_head_fit_prefixes:  # every prefix fits something, and only head parameters
        fitted = [n for n in names if n.startswith(prefix)]
        assert fitted and all(n.startswith(family.mlm_head_prefix + ".") for n in fitted), prefix
    vocab = base_model.config.vocab_size
    state = mlm.state_dict()
    vocab_keys = [k for k in family.mlm_vocab_keys if k in state]
    assert family.mlm_bias_key in vocab_keys and all(state[k].shape[0] == vocab for k in vocab_keys), vocab_keys
    word_table = base.state_dict()[family.word_embeddings_key]
    assert word_table.shape[0] == vocab
    assert mlm.get_output_embeddings().weight is dict(base.named_parameters())[family.word_embeddings_key]  # tied
    # The TensorFlow mirror: named after the PyTorch base class, and known to transformers (a typo raises here;
    # with USE_TF=0 the name resolves to a placeholder, so TensorFlow is not imported).
    assert family.tf_model_class == "TF" + type(base).__name__
    assert hasattr(transformers, family.tf_model_class)


def test_onnx_ffn_down_projection_names(tmp_path) -> None:
    """The int8 recipe keeps exactly one FFN down-projection MatMul per layer in float, for both families."""
    from edgebert.targets.onnx.quantize import ffn_down_projections

    for family in (BERT, ALBERT):
        model = _tiny(family.name).eval()
        path = tmp_path / f"{family.name}.onnx"
        ids = torch.ones(1, 6, dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(model, (ids, ids), str(path), input_names=["input_ids", "attention_mask"], opset_version=18, dynamo=False)
        names = ffn_down_projections(path, family)
        assert len(names) == 3, (family.name, names)
        assert not any("attention" in n for n in names)


def test_tfjs_keep_patterns_hit_only_ffn_down_projections() -> None:
    from edgebert.targets.tfjs.convert import quantize_flags

    bert = "StatefulPartitionedCall/tf_bert_model/bert/encoder/layer_._{}/{}/Tensordot/ReadVariableOp"
    albert = "StatefulPartitionedCall/tf_albert_model/albert/encoder/albert_layer_groups_._{}/albert_layers_._0/{}/Tensordot/ReadVariableOp"
    cases = [
        (BERT, bert, "output/dense", ("attention/output/dense", "intermediate/dense")),
        (ALBERT, albert, "ffn_output", ("attention/dense", "ffn", "attention/query")),
    ]
    for family, template, ffn_down, others in cases:
        flags = quantize_flags("uint8", keep_patterns=list(family.tfjs_ffn_output_patterns))
        assert flags[0] == "--quantize_float16" and flags[-1] == "--quantize_uint8"
        patterns = flags[1].split(",")

        def hits(name: str, patterns: list[str] = patterns) -> bool:
            return any(fnmatch.fnmatch(name, p) for p in patterns)

        assert hits(template.format(3, ffn_down)) and hits(template.format(11, ffn_down))
        assert not any(hits(template.format(3, other)) for other in others)
    assert quantize_flags("uint8", "output/dense", keep_patterns=[]) == ["--quantize_uint8", "*"]
