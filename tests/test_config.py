"""One config dataclass per verb: its defaults reach the CLI, the Python API and the recipe identically; distill's
auto loss weights follow the teacher's masked-LM head."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

import edgebert
from edgebert import config as cfg
from edgebert.cli import build_parser
from edgebert.errors import UserError
from edgebert.options import defaults

# verb -> (its config, the arguments the command requires)
VERBS = {
    "distill": (cfg.DistillConfig, ["--corpus", "c.txt", "--out", "o"]),
    "compress": (cfg.CompressConfig, ["--out", "o"]),
    "finetune": (cfg.FinetuneConfig, ["--model", "m", "--data", "d.csv", "--out", "o"]),
    "export": (cfg.ExportConfig, ["--target", "onnx"]),
    "bench": (cfg.BenchConfig, ["item", "--out", "o"]),
    "pipeline": (cfg.PipelineConfig, ["--preset", "tiny", "--out", "o"]),
}
# recipe section -> (its dataclass, the verb config whose defaults it shares)
SECTIONS = {"distill": cfg.DistillConfig, "compress": cfg.CompressConfig, "finetune": cfg.FinetuneConfig, "export": cfg.ExportConfig,
            "bench": cfg.BenchConfig}  # fmt: skip


@pytest.mark.parametrize("verb", VERBS)
def test_cli_defaults_are_the_configs(verb: str) -> None:
    """`edgebert VERB` with only its required arguments parses to the config's defaults, for every CLI option."""
    config, required = VERBS[verb]
    args = vars(build_parser().parse_args([verb, *required]))
    expected = defaults(config)
    cli = [f.name for f in dataclasses.fields(config) if f.metadata.get("cli")]
    assert cli, verb
    assert {name: args[name] for name in cli} == {name: expected[name] for name in cli}


@pytest.mark.parametrize("verb", VERBS)
def test_api_defaults_are_the_configs(verb: str) -> None:
    """`edgebert.VERB`'s keyword options are the config's fields with the config's defaults."""
    config, _ = VERBS[verb]
    params = inspect.signature(getattr(edgebert, verb)).parameters
    for name, value in defaults(config).items():
        assert name in params, (verb, name)
        assert params[name].default == value, (verb, name)


def test_cli_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {cfg.BenchConfig().repeats})" in text and f"(default: {cfg.BenchConfig().sst2_limit})" in text


@pytest.mark.parametrize("section", SECTIONS)
def test_recipe_defaults_are_the_configs(section: str) -> None:
    """An empty recipe section holds the verb config's defaults for every field they share."""
    from edgebert.pipeline import parse_recipe

    recipe = parse_recipe(f"[{section}]\n")
    values = dataclasses.asdict(getattr(recipe, section))
    expected = defaults(SECTIONS[section])
    shared = set(values) & set(expected)
    assert len(shared) >= 2, section
    assert {k: values[k] for k in shared} == {k: expected[k] for k in shared}


def test_recipe_heal_and_vocab_defaults_are_their_configs() -> None:
    from edgebert.pipeline import parse_recipe

    recipe = parse_recipe("")
    heal = cfg.HealConfig()
    assert (recipe.compress.heal_steps, recipe.compress.heal_lr, recipe.compress.heal_seq_len) == (heal.steps, heal.lr, heal.seq_len)
    assert (recipe.vocab.min_count, recipe.vocab.max_size) == (cfg.VocabConfig().min_count, cfg.VocabConfig().max_size)


def test_compress_heal_flags_default_to_heal_config() -> None:
    args = build_parser().parse_args(["compress", "--out", "o"])
    heal = cfg.HealConfig()
    assert (args.heal_losses, args.heal_lr, args.heal_batch_size) == (heal.losses, heal.lr, heal.batch_size)
    assert args.vocab_min_count == cfg.VocabConfig().min_count


@pytest.mark.parametrize("verb", ["distill", "compress", "export", "bench", "pipeline"])
def test_unknown_api_option_is_one_user_error(verb: str) -> None:
    args = {"distill": ("t", "c", "o"), "compress": ("m", "o"), "export": ("onnx",), "bench": (["i"], "o"), "pipeline": ()}[verb]
    with pytest.raises(UserError, match=rf"{verb}\(\) got an unknown option 'stepz'"):
        getattr(edgebert, verb)(*args, stepz=3)


@pytest.mark.parametrize(
    ("given", "head", "expected"),
    [
        ({}, True, {"alpha_mlm": 2.0, "alpha_ce": 5.0, "alpha_cos": 1.0, "alpha_pooled": 0.0, "mlm_probability": 0.15}),
        ({}, False, {"alpha_mlm": 0.0, "alpha_ce": 0.0, "alpha_cos": 1.0, "alpha_pooled": 1.0, "mlm_probability": 0.0}),
        ({"alpha_ce": 3.0}, False, {"alpha_mlm": 0.0, "alpha_ce": 3.0, "alpha_cos": 1.0, "alpha_pooled": 1.0, "mlm_probability": 0.15}),
        ({"alpha_mlm": 0.0, "alpha_ce": 0.0}, True, {"alpha_mlm": 0.0, "alpha_ce": 0.0, "alpha_cos": 1.0, "alpha_pooled": 0.0, "mlm_probability": 0.0}),
        ({"mlm_probability": 0.3}, False, {"alpha_mlm": 0.0, "alpha_ce": 0.0, "alpha_cos": 1.0, "alpha_pooled": 1.0, "mlm_probability": 0.3}),
    ],
)
def test_auto_losses(given: dict[str, float], head: bool, expected: dict[str, float]) -> None:
    chosen, reason = cfg.auto_losses({k: given.get(k) for k in cfg.LOSS_OPTIONS}, head)
    assert chosen == expected
    assert ("triple loss" if head else "cosine-only") in reason
    all_given = dict.fromkeys(cfg.LOSS_OPTIONS, 1.0)
    assert cfg.auto_losses(all_given, head) == (all_given, "as given")


@pytest.fixture(scope="module")
def mlm_teacher(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny_bert with its own (random) masked-LM head."""
    import shutil

    from transformers import BertForMaskedLM

    out = tmp_path_factory.mktemp("mlm") / "teacher"
    shutil.copytree(tiny_bert, out)
    BertForMaskedLM.from_pretrained(tiny_bert).save_pretrained(out, safe_serialization=True)
    return out


@pytest.mark.parametrize("with_head", [True, False])
def test_distill_chooses_losses_from_the_teachers_head(
    with_head: bool, mlm_teacher: Path, tiny_bert: Path, tiny_corpus: Path, tmp_path: Path
) -> None:
    teacher = mlm_teacher if with_head else tiny_bert
    report = edgebert.distill(
        str(teacher), str(tiny_corpus), tmp_path / "s", student_layers=1, steps=1, batch_size=4, seq_len=24, head_steps=2,
        save_steps=1, cache_dir=tmp_path / "cache", quiet=True,
    )  # fmt: skip
    recipe = json.loads((report.out_dir / "edgebert.json").read_text())["recipe"]
    if with_head:
        assert recipe["losses"]["alpha_mlm"] == 2.0 and recipe["losses"]["alpha_ce"] == 5.0 and recipe["mlm_probability"] == 0.15
        assert "triple loss" in recipe["loss_choice"]
    else:
        assert recipe["losses"]["alpha_mlm"] == 0.0 and recipe["losses"]["alpha_pooled"] == 1.0 and recipe["mlm_probability"] == 0.0
        assert "cosine-only" in recipe["loss_choice"]


def test_explicit_losses_win(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    report = edgebert.distill(
        str(tiny_bert), str(tiny_corpus), tmp_path / "s", student_layers=1, steps=1, batch_size=4, seq_len=24, head_steps=2,
        save_steps=1, alpha_mlm=1.0, alpha_ce=0.0, alpha_cos=0.5, alpha_pooled=0.0, mlm_probability=0.2,
        cache_dir=tmp_path / "cache", quiet=True,
    )  # fmt: skip
    recipe = report.manifest["recipe"]
    assert recipe["losses"]["alpha_mlm"] == 1.0 and recipe["losses"]["alpha_cos"] == 0.5 and recipe["mlm_probability"] == 0.2
    assert recipe["loss_choice"] == "as given"
