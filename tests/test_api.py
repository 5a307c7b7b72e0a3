"""The top-level Python API: `edgebert.<verb>(...)` for every CLI verb, lazily imported, on the tiny fixtures."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import edgebert
from edgebert.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
VERBS = ("distill", "compress", "finetune", "export", "bench", "pipeline")
HEAVY = ("torch", "transformers", "numpy", "onnxruntime", "tensorflow")


def _python(code: str) -> str:
    """Run `code` in a fresh interpreter from the checkout (its own `edgebert`); its stdout."""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_and_help_load_no_heavy_module() -> None:
    code = (
        "import sys, edgebert\n"
        "assert all(callable(getattr(edgebert, v)) for v in edgebert.__all__ if v != '__version__')\n"
        "from edgebert.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    assert _python(code).splitlines()[-1] == "[]"


def test_all_lists_the_verbs() -> None:
    assert set(edgebert.__all__) == {*VERBS, "__version__"}
    assert set(VERBS) <= set(dir(edgebert))


def test_submodule_imports_do_not_replace_the_verbs() -> None:
    """`import edgebert.bench.harness` after `import edgebert` keeps `edgebert.bench` the verb, and the submodule paths
    still resolve through it (a fresh interpreter: nothing imported yet)."""
    code = """
import sys
import edgebert
verbs = {v: getattr(edgebert, v) for v in ("distill", "compress", "finetune", "export", "bench", "pipeline")}
import edgebert.bench.harness
import edgebert.finetune.api
import edgebert.pipeline.run
import edgebert.distill.api
import edgebert.compress.importance
import edgebert.export
assert all(getattr(edgebert, v) is f for v, f in verbs.items()), {v: getattr(edgebert, v) for v in verbs}
import edgebert.bench.harness as harness
from edgebert.bench import harness as harness2
assert harness is harness2 is sys.modules["edgebert.bench.harness"]
assert edgebert.bench.harness.run_bench is harness.run_bench
assert edgebert.distill.distill is sys.modules["edgebert.distill.api"].distill
assert edgebert.export.verify_kernel_paths is sys.modules["edgebert.export"].verify_kernel_paths
print("ok")
"""
    assert _python(code).strip() == "ok"


def test_verbs_show_their_functions_signature_and_doc() -> None:
    from edgebert.api import bench, pipeline
    from edgebert.compress.compress import compress
    from edgebert.distill.api import distill
    from edgebert.export import export
    from edgebert.finetune.api import finetune

    for verb, function in zip(VERBS, (distill, compress, finetune, export, bench, pipeline)):
        assert inspect.signature(getattr(edgebert, verb)) == inspect.signature(function), verb
        assert getattr(edgebert, verb).__doc__ == function.__doc__
        assert getattr(edgebert, verb).function() is function


def test_setting_an_attribute_through_a_verb_sets_the_submodules(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `edgebert.distill.distill = fake` did when `edgebert.distill` was the package still works (the CLI calls
    the package's function), and the verb itself can be replaced and restored."""
    import edgebert.distill

    package = sys.modules["edgebert.distill"]
    monkeypatch.setattr(edgebert.distill, "distill", "fake")
    assert package.distill == "fake"
    monkeypatch.undo()
    assert package.distill is edgebert.distill.function()
    verb = edgebert.export
    monkeypatch.setattr(edgebert, "export", "fake")
    assert edgebert.export == "fake"
    monkeypatch.undo()
    assert edgebert.export is verb


@pytest.fixture(scope="module")
def tiny_export(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("api") / "onnx"
    report = edgebert.export("onnx", model=str(tiny_bert), out=out, seq_len=32, quiet=True)
    assert report.out_dir == out and report.parity["passed"] is True
    return out


def test_export_then_bench(tiny_export: Path, tiny_bert: Path, tmp_path: Path) -> None:
    assert json.loads((tiny_export / "edgebert.json").read_text())["target"] == "onnx"
    outcome = edgebert.bench(
        [f"teacher={tiny_bert}", f"onnx={tiny_export}"], tmp_path / "bench", seq_len=16, warmup=1, repeats=2,
        in_process=True, quiet=True,
    )  # fmt: skip
    assert not outcome.interrupted
    assert [i["label"] for i in outcome.report["items"]] == ["teacher", "onnx"]
    assert all(i["status"] == "ok" for i in outcome.report["items"])
    assert (tmp_path / "bench" / "report.json").is_file()


def test_compress(tiny_bert: Path, tmp_path: Path) -> None:
    report = edgebert.compress(str(tiny_bert), tmp_path / "pruned", heads_to_prune={0: [1]}, seq_len=32, quiet=True)
    config = json.loads((report.out_dir / "config.json").read_text())
    assert config["pruned_heads"] == {"0": [1]}


def test_distill(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    report = edgebert.distill(
        str(tiny_bert), str(tiny_corpus), tmp_path / "student", student_layers=1, steps=2, batch_size=4, seq_len=24,
        alpha_mlm=0.0, alpha_ce=0.0, mlm_probability=0.0, save_steps=2, logging_steps=1, cache_dir=tmp_path / "cache",
        quiet=True,
    )  # fmt: skip
    assert json.loads((report.out_dir / "config.json").read_text())["num_hidden_layers"] == 1


@pytest.mark.parametrize(
    ("verb", "args", "kwargs", "fragment"),
    [
        ("export", ("nope",), {}, "nope"),
        ("export", ("onnx",), {"seq_len": "32"}, "--seq-len must be an integer"),
        ("bench", ("ITEM", "OUT"), {}, "bench items must be a list of strings"),
        ("bench", (["ITEM"], "OUT"), {"repeats": 0}, "--repeats must be at least 1"),
        ("bench", (["ITEM"], "OUT"), {"seq_len": "128"}, "--seq-len"),
        ("bench", (["ITEM"], "OUT"), {"sts_limit_for": {"gpu": 3}}, "sts_limit_for must be"),
        ("compress", ("MODEL", "OUT"), {"prune_heads": 2.0}, "--prune-heads"),
        ("distill", ("MODEL", "CORPUS", "OUT"), {"steps": 0}, "--steps must be at least 1"),
        ("finetune", ("MODEL", "CORPUS", "OUT"), {"epochs": 0}, "--epochs must be at least 1"),
        ("finetune", ("MODEL", "CORPUS", "OUT"), {}, "has no sentence-transformers stack"),
        ("pipeline", (), {"out": "OUT"}, "pass exactly one of recipe"),
        ("pipeline", (), {"preset": "tiny", "out": 123}, "--out must be a path"),
        ("pipeline", (), {"preset": "tiny", "out": "OUT", "steps": 0}, "--steps must be at least 1"),
        ("pipeline", (), {"preset": "no-such-preset", "out": "OUT"}, "--preset no-such-preset is unknown"),
    ],
)
def test_bad_input_is_a_user_error(
    tiny_bert: Path, tmp_path: Path, verb: str, args: tuple[object, ...], kwargs: dict[str, object], fragment: str
) -> None:
    names = {"MODEL": str(tiny_bert), "CORPUS": str(tiny_bert / "vocab.txt"), "OUT": str(tmp_path / "out"), "ITEM": str(tiny_bert)}
    args = tuple(names.get(a, a) if isinstance(a, str) else [names.get(x, x) for x in a] if isinstance(a, list) else a for a in args)
    kwargs = {k: names.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    with pytest.raises(UserError, match=fragment):
        getattr(edgebert, verb)(*args, **kwargs)
    assert not (tmp_path / "out").exists()


def test_pipeline_does_not_change_the_recipe_given(tmp_path: Path) -> None:
    from edgebert.pipeline import parse_recipe

    recipe = parse_recipe("[distill]\nsteps = 3\n")
    with pytest.raises(UserError):
        edgebert.pipeline(recipe, tmp_path / "out", steps=5, teacher=str(tmp_path / "missing-teacher"))
    assert recipe.distill.steps == 3 and recipe.teacher == "default"
