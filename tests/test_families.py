"""The per-family facts: lookup, layer lists, module roles that resolve on real models, export name patterns."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from edgebert.errors import UserError
import edgebert
from edgebert.families import (
    ALBERT,
    BERT,
    EMBEDDING_ROLES,
    FAMILIES,
    LAYER_ROLES,
    WEIGHT_ROLES,
    family_for,
    family_named,
    get_path,
    set_path,
    supported_model_types,
)


def _tiny(family_name: str) -> nn.Module:
    from transformers import AlbertConfig, AlbertModel, AutoConfig, AutoModel, BertConfig, BertModel

    torch.manual_seed(0)
    if family_name == "bert":
        return BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=32))
    if family_name == "distilbert":
        return AutoModel.from_config(AutoConfig.for_model("distilbert", vocab_size=50, dim=16, n_layers=3, n_heads=2, hidden_dim=32))
    if family_name in ("roberta", "electra", "xlm-roberta", "mpnet", "modernbert", "deberta-v2"):
        extra = {
            "electra": {"embedding_size": 8},
            "modernbert": {"global_attn_every_n_layers": 2, "local_attention": 8, "pad_token_id": 0, "bos_token_id": 1,
                           "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2},
            "deberta-v2": {"relative_attention": True, "position_buckets": 16, "pos_att_type": ["p2c", "c2p"],
                           "position_biased_input": False, "type_vocab_size": 0},
        }.get(family_name, {})  # fmt: skip
        config = AutoConfig.for_model(
            family_name, vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=32, **extra
        )
        config._attn_implementation = "eager"  # as edgebert loads every model (MPNet and DeBERTa have no SDPA path)
        return AutoModel.from_config(config)
    if family_name == "xlnet":
        config = AutoConfig.for_model("xlnet", vocab_size=50, d_model=16, n_layer=3, n_head=2, d_inner=32)
        config._attn_implementation = "eager"  # XLNet has no SDPA path
        return AutoModel.from_config(config)
    return AlbertModel(AlbertConfig(
        vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=3, inner_group_num=1,
        num_attention_heads=2, intermediate_size=32,
    ))  # fmt: skip


def test_lookup_and_unknown_types() -> None:
    assert family_for("bert") is BERT and family_for("albert") is ALBERT
    assert family_named("bert") is BERT and family_named("albert") is ALBERT
    assert {"bert", "albert"} <= set(supported_model_types())
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    with pytest.raises(UserError, match="not supported yet; supported: bert, albert, roberta, xlm-roberta, electra, distilbert, mpnet"):
        family_for("gpt2")
    assert family_for("xlnet").name == "xlnet"
    with pytest.raises(UserError, match="unknown model family 'gpt2'; known: bert, albert"):
        family_named("gpt2")


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_family_names_every_role(family) -> None:
    """Roles are the same vocabulary in every family (a new family fills the same table)."""
    assert [role for role, _ in family.layer_modules] == list(LAYER_ROLES)
    assert {role for role, _ in family.embedding_modules} <= set(EMBEDDING_ROLES)
    with pytest.raises(KeyError, match="no layer role 'mlp'; roles: attention, query"):
        family.layer_module("mlp")


@pytest.mark.parametrize("family", [BERT, ALBERT], ids=lambda f: f.name)
def test_module_roles_resolve_on_a_real_model(family) -> None:
    model = _tiny(family.name)
    layers = family.layers(model)
    assert len(layers) == 3 and len({id(layer) for layer in layers}) == 3
    assert all(type(layer).__name__ in ("BertLayer", "AlbertLayer") for layer in layers)
    attention = family.module(layers[1], "attention")
    assert int(attention.num_attention_heads) == 2 and int(attention.attention_head_size) == 8
    shapes = {}
    for role in WEIGHT_ROLES:
        module = family.module(layers[1], role)
        assert module is get_path(layers[1], family.layer_module(role))
        assert isinstance(module, (nn.LayerNorm if role.endswith("_norm") else nn.Linear)), role
        shapes[role] = tuple(module.weight.shape)
    assert shapes["ffn_input"] == (32, 16) and shapes["ffn_output"] == (16, 32) and shapes["query"] == (16, 16)
    assert shapes["attention_output"] == (16, 16) and shapes["output_norm"] == (16,)
    kinds = {"word": nn.Embedding, "position": nn.Embedding, "token_type": nn.Embedding, "norm": nn.LayerNorm, "projection": nn.Linear}
    parts = family.embedding_parts(model)
    for role in EMBEDDING_ROLES:
        part = family.embedding(model, role)
        assert (part is None) == (family.embedding_module(role) is None) == (role not in parts), role
        assert part is None or isinstance(part, kinds[role]), role
    assert parts["word"].weight.shape == (50, 8 if family is ALBERT else 16)
    assert (family.embedding_module("projection") is not None) == (family.embedding_size_field is not None)
    assert family.input_names() == ["input_ids", "attention_mask", "token_type_ids"]


@pytest.mark.parametrize("family", [BERT, ALBERT], ids=lambda f: f.name)
def test_replace_module_and_missing_weights(family) -> None:
    model = _tiny(family.name)
    layer = family.layers(model)[2]
    new = nn.Linear(16, 8)
    family.replace_module(layer, "ffn_input", new)
    assert family.module(layer, "ffn_input") is new and family.module(family.layers(model)[2], "ffn_input") is new
    keys = list(model.state_dict())
    assert any(".pooler." in f".{k}" for k in keys)
    assert family.required_missing(keys) == [k for k in keys if not k.startswith("pooler.")]
    assert family.required_missing(["pooler.dense.weight", "bert.pooler.dense.bias"]) == []


def test_dotted_paths_index_lists() -> None:
    tree = nn.Module()
    tree.groups = nn.ModuleList([nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 3))])
    assert get_path(tree, "groups.0.1").out_features == 3 and get_path(tree, "") is tree
    set_path(tree, "groups.0.1", nn.Linear(2, 4))
    assert tree.groups[0][1].out_features == 4
    plain = {"a": [1, [2, 3]]}
    assert get_path(type("Holder", (), plain), "a.1.0") == 2


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.mlm_class], ids=lambda f: f.name)
def test_mlm_classes_match_the_fields(family) -> None:
    """The masked-LM class and every field that names something inside it (or mirrors its base model) resolve."""
    import transformers

    base_model = _tiny(family.name)
    mlm = getattr(transformers, family.mlm_class)(base_model.config)
    base = getattr(mlm, family.mlm_base_attr)
    assert type(base) is type(base_model) and len(family.layers(base)) == 3
    hidden = torch.randn(2, int(getattr(base_model.config, family.size_fields[1])))
    assert family.mlm_head(mlm)(hidden).shape == (2, base_model.config.vocab_size)  # hidden states -> logits
    names = dict(mlm.named_parameters())
    head = [n for n in mlm.state_dict() if not n.startswith(family.mlm_base_attr + ".")]
    assert head and all(family.is_mlm_head_key(n) for n in head), head
    assert not any(family.is_mlm_head_key(n) for n in base.state_dict())
    assert family.mlm_bias_key in names
    for prefix in family.mlm_head_fit_prefixes:  # every prefix fits something, and only head parameters
        fitted = [n for n in names if n.startswith(prefix)]
        assert fitted and all(family.is_mlm_head_key(n) for n in fitted), prefix
    for role, _ in family.mlm_head_parts:
        assert isinstance(family.mlm_head_part(mlm, role), (nn.Linear if role == "transform" else nn.LayerNorm)), role
    vocab = base_model.config.vocab_size
    state = mlm.state_dict()
    vocab_keys = [k for k in family.mlm_vocab_keys if k in state]
    assert family.mlm_bias_key in vocab_keys and all(state[k].shape[0] == vocab for k in vocab_keys), vocab_keys
    word_table = base.state_dict()[family.word_embeddings_key]
    assert word_table.shape[0] == vocab
    assert mlm.get_output_embeddings().weight is dict(base.named_parameters())[family.word_embeddings_key]  # tied
    assert family.mlm_decoder_key in state and family.mlm_decoder_key in family.mlm_vocab_keys
    layer_keys = [k for k in state if k.startswith(family.mlm_layers_prefix() + ".")]
    assert {k[len(family.mlm_layers_prefix()) + 1 :].split(".")[0] for k in layer_keys} == {"0", "1", "2"}
    # The FFN down-projection patterns (TF.js uint8 keeps them float16) hit exactly one weight per layer.
    keys = [f"encoder.{k}" for k in base.state_dict()]
    hits = [k for k in keys if any(fnmatch.fnmatch(k, p) for p in family.layer_weight_patterns())]
    assert len(hits) == family.distinct_layers(base.config) and all("attention" not in k for k in hits), hits


class _ByName(nn.Module):
    """A base model called with keyword inputs (transformers 5's forward takes more than these two positionally)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def test_onnx_ffn_down_projection_names(tmp_path) -> None:
    """The int8 recipe keeps exactly one FFN down-projection MatMul per layer in float, for both families."""
    from edgebert.targets.onnx.quantize import ffn_down_projections

    for family in (BERT, ALBERT):
        model = _tiny(family.name).eval()
        path = tmp_path / f"{family.name}.onnx"
        ids = torch.ones(1, 6, dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(_ByName(model), (ids, ids), str(path), input_names=["input_ids", "attention_mask"], opset_version=18, dynamo=False)
        names = ffn_down_projections(path, family)
        assert len(names) == 3, (family.name, names)
        assert not any("attention" in n for n in names)


# --- nothing outside families.py knows a module name -----------------------------------------------------------

# Module-path segments that are also ordinary words in edgebert's code (role names, edgebert's own attributes such
# as SentenceEmbedder.encoder, pooling "cls"); a whole dotted path that contains them is still caught.
COMMON_WORDS = {"attention", "self", "query", "key", "value", "output", "dense", "layer", "encoder", "embeddings",
                "ffn", "ffn_output", "weight", "bias", "bert", "albert", "distilbert", "roberta", "electra", "cls", "transform", "0", "",
                "model", "layers", "norm", "head", "decoder", "q", "k", "v", "o", "mpnet", "deberta"}  # fmt: skip


def _known_module_names() -> tuple[set[str], set[str]]:
    """(dotted paths of every family, distinctive single names) from the families' own tables."""
    paths: set[str] = set()
    for f in FAMILIES:
        tables = [*f.layer_modules, *f.embedding_modules]
        paths |= {p for _, p in tables} | {f.layers_path, f.layer_inner_path, f.word_embeddings_key}
        paths |= {f.mlm_bias_key, f.mlm_decoder_key, *f.mlm_vocab_keys, *(p.rstrip(".") for p in f.mlm_head_fit_prefixes)}
        paths |= {f"{f.mlm_base_attr}.{f.layers_path}"} | set(f.optional_modules)
    segments = {s for p in paths for s in p.split(".")} - COMMON_WORDS
    dotted = {p for p in paths if "." in p}
    return dotted | {p.replace(".", "/") for p in dotted} | {"layer_._"}, segments


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    return {
        id(n.body[0].value)
        for n in nodes
        if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
    }


def module_name_uses(source: str, dotted: set[str], names: set[str]) -> list[str]:
    """Module names in the code of `source` (string literals and attribute accesses; docstrings and comments are prose)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    path_re = re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(p) for p in sorted(dotted, key=len, reverse=True)) + r")(?![\w])")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if node.value in names or path_re.search(node.value):
                found.append(f"line {node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr in names and ast.unparse(node.value) not in ("nn", "torch.nn"):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_no_module_name_outside_families() -> None:
    dotted, names = _known_module_names()
    assert {"LayerNorm", "intermediate", "pooler", "albert_layer_groups", "full_layer_layer_norm"} <= names
    assert {"attention.self.query", "output/dense", "encoder.layer", "bert.encoder.layer"} <= dotted
    root = Path(edgebert.__file__).parent
    offenders = {}
    for path in sorted(root.rglob("*.py")):
        if path.name == "families.py" and path.parent == root:
            continue
        uses = module_name_uses(path.read_text(encoding="utf-8"), dotted, names)
        if uses:
            offenders[str(path.relative_to(root))] = uses
    assert not offenders, f"module names outside edgebert/families.py (use the Family accessors): {offenders}"


def test_the_module_name_check_catches_what_it_should() -> None:
    dotted, names = _known_module_names()
    caught = [
        'path = "attention.self.query"',
        'if "LayerNorm" in key: pass',
        "x = layer.intermediate.dense",
        'pattern = f"*/layer_._{i}/output/dense/*"',
        'keep = "output/dense"',
        'missing = [k for k in keys if "pooler" not in k]',
    ]
    for line in caught:
        assert module_name_uses(line, dotted, names), line
    prose = [
        'def f():\n    """The LayerNorm of attention.self.query."""\n',
        "# output.dense\nx = 1",
        'mode = "cls"',
        "y = model.encoder",
        "ok = isinstance(m, nn.LayerNorm)",  # torch's class, not a module name
    ]
    for text in prose:
        assert not module_name_uses(text, dotted, names), text


def _walks_dotted_paths(source: str) -> list[int]:
    """Lines of `for ... in <x>.split(".")` loops whose body calls getattr: hand-written dotted-path walkers."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.For) and "split('.')" in ast.unparse(node.iter):
            calls = [n for n in ast.walk(node) if isinstance(n, ast.Call) and ast.unparse(n.func) == "getattr"]
            if calls:
                lines.append(node.lineno)
    return lines


def test_one_dotted_path_walker() -> None:
    """families.get_path is the only walker (torch's get_submodule / get_parameter are fine too)."""
    assert _walks_dotted_paths('for name in path.split("."):\n    module = getattr(module, name)\n') == [1]
    root = Path(edgebert.__file__).parent
    walkers = {str(p.relative_to(root)): _walks_dotted_paths(p.read_text(encoding="utf-8")) for p in root.rglob("*.py")}
    assert {k: v for k, v in walkers.items() if v} == {"families.py": walkers["families.py"]}
    assert walkers["families.py"]
