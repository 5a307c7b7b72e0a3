"""Shared-layer students (`--layer-groups G`, ALBERT's cross-layer sharing): L passes over G layer modules, each module
started from the teacher layer matched with its last pass; saved as a stock AlbertModel, distilled, pruned, healed
and exported to every target without a copy of the shared weights a pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import build_tiny_bert

from edgebert.errors import UserError
from edgebert.families import ALBERT, BERT

PASSES, GROUPS = 4, 2
SEQ_LEN = 24


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-layer, 64-wide random BERT: its layers outweigh the graph, so a duplicated layer would show in a file."""
    return build_tiny_bert(tmp_path_factory.mktemp("teacher4") / "bert4", layers=4, hidden=64, heads=4, ffn=256)


@pytest.fixture(scope="module")
def teacher(teacher_dir: Path):
    from transformers import BertForMaskedLM

    return BertForMaskedLM.from_pretrained(teacher_dir, attn_implementation="eager").eval()


def _spec(**kw):
    from edgebert.distill.student import StudentSpec

    return StudentSpec(**{"layers": PASSES, "embedding_dim": 16, "layer_groups": GROUPS, **kw})


@pytest.mark.parametrize(("groups", "sources"), [(2, [1, 3]), (1, [3]), (4, [0, 1, 2, 3])])
def test_the_student_runs_l_passes_over_g_modules_each_from_its_last_passs_teacher_layer(teacher, groups: int, sources: list[int]) -> None:
    from edgebert.distill.student import build_student

    student, shape, init = build_student(teacher, _spec(layer_groups=groups), BERT)
    config = student.config
    assert (config.num_hidden_layers, config.num_hidden_groups, config.inner_group_num) == (PASSES, groups, 1)
    modules = ALBERT.layers(student.albert)
    assert len(modules) == groups and shape.layer_groups == groups
    for module, t in zip(modules, sources):
        assert torch.equal(module.ffn.weight, BERT.layers(teacher.bert)[t].intermediate.dense.weight)
    if groups < PASSES:
        assert init["layer_sharing"]["module_sources"] == sources and init["layer_sharing"]["passes"] == PASSES
    else:
        assert "layer_sharing" not in init
    out = student.albert(input_ids=torch.tensor([[2, 7, 9, 3]]), output_hidden_states=True)
    assert len(out.hidden_states) == PASSES + 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [({"layer_groups": 3}, "--layer-groups 3 must divide --student-layers 4"),
     ({"layer_groups": 5}, "--layer-groups 5 must divide --student-layers 4"),
     ({"embedding_dim": None}, "add --embedding-dim")],
)  # fmt: skip
def test_impossible_sharing_is_one_line(teacher, spec: dict, message: str) -> None:
    from edgebert.distill.student import resolve_shape

    with pytest.raises(UserError, match=message) as info:
        resolve_shape(teacher.config, _spec(**spec), BERT)
    assert "\n" not in str(info.value)


def test_the_cli_flag_refuses_in_one_line_before_writing(run_cli, teacher_dir: Path, tiny_corpus: Path, tmp_path: Path) -> None:  # noqa: ANN001
    code, _, err = run_cli("distill", "--teacher", str(teacher_dir), "--corpus", str(tiny_corpus), "--out", str(tmp_path / "s"),
                           "--student-layers", "4", "--embedding-dim", "8", "--layer-groups", "3")  # fmt: skip
    assert code == 2 and "--layer-groups 3 must divide --student-layers 4" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "s").exists()
    code, out, _ = run_cli("distill", "--help")
    assert code == 0 and "--layer-groups G" in out


@pytest.fixture(scope="module")
def shared_student(teacher_dir: Path, tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A distilled 4-pass student over 2 shared layer modules (E = 16)."""
    from edgebert.distill import distill

    out = tmp_path_factory.mktemp("shared") / "student"
    distill(teacher_dir, tiny_corpus, out, student_layers=PASSES, embedding_dim=16, layer_groups=GROUPS, steps=3, batch_size=4,
            seq_len=SEQ_LEN, student_head_steps=0, alpha_mlm=0.0, alpha_ce=0.0, alpha_cos=1.0, alpha_pooled=1.0,
            mlm_probability=0.0, quiet=True)  # fmt: skip
    return out


def test_the_distilled_student_is_a_stock_shared_albert(shared_student: Path) -> None:
    from transformers import AlbertModel, AutoModel

    config = json.loads((shared_student / "config.json").read_text())
    assert config["model_type"] == "albert" and config["architectures"] == ["AlbertModel"] and "auto_map" not in config
    assert (config["num_hidden_layers"], config["num_hidden_groups"]) == (PASSES, GROUPS)
    model = AutoModel.from_pretrained(shared_student)
    assert isinstance(model, AlbertModel) and len(ALBERT.layers(model)) == GROUPS
    manifest = json.loads((shared_student / "edgebert.json").read_text())
    assert manifest["model"]["shared_layers"] == {"layer_modules": GROUPS, "passes": PASSES}
    assert manifest["model"]["heads_per_layer"] == [4] * GROUPS
    assert manifest["recipe"]["student"]["layer_groups"] == GROUPS
    assert manifest["distill"]["init"]["layer_sharing"]["module_sources"] == [1, 3]


def test_the_shared_student_prunes_each_module_once_and_heals_from_itself(shared_student: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    """Pruning scores a module over all its passes and cuts it once; healing distils the (partly shared) unpruned
    student, as a teacher, into the pruned one."""
    from edgebert.compress.compress import compress
    from edgebert.config import HealConfig
    from edgebert.modelio import load_weights
    from transformers import AutoModel

    heal = HealConfig(steps=2, corpus=[str(tiny_corpus)], batch_size=4, seq_len=SEQ_LEN)
    report = compress(shared_student, tmp_path / "pruned", prune_heads=0.25, prune_ffn=0.5, calibration=tiny_corpus,
                      calibration_samples=16, seq_len=SEQ_LEN, heal=heal, quiet=True)  # fmt: skip
    manifest = report.manifest
    assert manifest["model"]["shared_layers"] == {"layer_modules": GROUPS, "passes": PASSES}
    assert manifest["pruning"]["heads_per_layer"]["before"] == [4] * GROUPS
    assert sum(manifest["pruning"]["heads_per_layer"]["after"]) == 6 and manifest["healing"]["steps"] == 2
    model = load_weights(AutoModel, tmp_path / "pruned")[0]
    assert model.config.num_hidden_groups == GROUPS and model.config.intermediate_size == 128


# Every target in float (a duplicated weight shows plainly in the file), and ONNX int8 (parity; it quantizes a shared
# weight once, docs/export.md#shared-layers).
TARGETS = [("onnx", "none"), ("onnx", "int8"), ("tflite", "none"), ("tfjs", "none"), ("executorch", "none")]


@pytest.mark.parametrize(("target", "quantize"), TARGETS)
def test_every_target_holds_parity_and_stores_each_shared_weight_once(shared_student: Path, tmp_path: Path, target: str, quantize: str) -> None:
    """ONNX initializers, TFLite buffers, TF.js weights and ExecuTorch's constants hold a shared module once, read by all
    its passes (TFLite's query/key/value once per LayerNorm folded into them, docs/export.md#shared-layers): a float
    file stays below the student's weights plus one more copy of its layer modules."""
    from safetensors.torch import load_file

    from edgebert.export import export

    report = export(target, model=shared_student, out=tmp_path / target, quantize=quantize, seq_len=SEQ_LEN, quiet=True)
    manifest = report.manifest
    assert manifest["parity"]["passed"], manifest["parity"]
    if quantize == "none":
        assert manifest["parity"]["min_cosine"] >= 0.9999
        weights = load_file(str(shared_student / "model.safetensors"))
        module_bytes = sum(t.numel() * 4 for k, t in weights.items() if ".albert_layer_groups." in k)
        total_bytes = sum(t.numel() * 4 for t in weights.values())
        assert sum(manifest["files"].values()) < total_bytes + module_bytes  # a copy a pass would add 2 more modules


def test_a_recipe_sets_layer_groups_and_a_bad_count_is_refused_before_any_teacher() -> None:
    from edgebert.pipeline.recipe import parse_recipe

    recipe = parse_recipe('extends = "small"\n[distill]\nstudent_layers = 6\nlayer_groups = 3\n')
    assert recipe.distill.kwargs()["layer_groups"] == 3 and recipe.distill.embedding_dim == 128
    with pytest.raises(UserError, match="distill.layer_groups 4 must divide student_layers 6") as info:
        parse_recipe('extends = "small"\n[distill]\nstudent_layers = 6\nlayer_groups = 4\n')
    assert "\n" not in str(info.value)


def test_a_student_family_that_cannot_share_is_refused(teacher_dir: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    from edgebert.distill import distill

    with pytest.raises(UserError, match="a distilbert student \\(--student-family\\) cannot share them"):
        distill(teacher_dir, tiny_corpus, tmp_path / "s", student_layers=2, student_family="distilbert", layer_groups=1, steps=1, quiet=True)
    assert not (tmp_path / "s").exists()
