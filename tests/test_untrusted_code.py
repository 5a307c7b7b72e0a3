"""No verb runs code a model directory or checkpoint brings: every loader call says so explicitly (checked over the
source tree), custom tokenizer code is refused before augmentation, and a resumed distillation never unpickles
more than tensors, whatever TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD says."""

from __future__ import annotations

import ast
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgebert.errors import UserError

REPO = Path(__file__).resolve().parents[1]

# call name -> (keyword, the only value it may have); calls named in FORBIDDEN may not appear at all
SAFE_ARGUMENT = {
    "from_pretrained": ("trust_remote_code", False),
    "SentenceTransformer": ("trust_remote_code", False),
    "torch.load": ("weights_only", True),
    "np.load": ("allow_pickle", False),
    "numpy.load": ("allow_pickle", False),
}
FORBIDDEN = {"pickle.load", "pickle.loads", "joblib.load", "dill.load", "torch.jit.load", "cloudpickle.load"}


def _call_name(func: ast.expr) -> str:
    """`a.b.c(...)` -> "a.b.c"; a method on any other expression keeps its attribute ("x().from_pretrained" ->
    "from_pretrained" is matched by its last part)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def unsafe_loader_calls(source: str, filename: str = "<source>") -> list[str]:
    """`file:line name` of each loader call in `source` that lacks its safe argument, or must not be made."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node.func)
        last = name.rsplit(".", 1)[-1]
        rule = SAFE_ARGUMENT.get(name) or SAFE_ARGUMENT.get(last if last in ("from_pretrained", "SentenceTransformer") else "")
        if name in FORBIDDEN:
            found.append(f"{filename}:{node.lineno} {name}")
        elif rule is not None:
            keyword, value = rule
            given = {k.arg: k.value for k in node.keywords}
            if not (isinstance(given.get(keyword), ast.Constant) and given[keyword].value is value):
                found.append(f"{filename}:{node.lineno} {name} without {keyword}={value}")
    return found


def _tracked_python() -> list[Path]:
    """The project's own Python: the package and the benchmark scripts, suites and experiments (result folders hold
    records, not tools)."""
    scripts = [*REPO.glob("benchmarks/suites/*.py"), *REPO.glob("benchmarks/experiments/*.py")]
    assert scripts, "benchmarks/suites/ and benchmarks/experiments/ hold the benchmark scripts"
    return sorted(REPO.glob("edgebert/**/*.py")) + sorted(scripts)


def test_every_loader_call_refuses_code_explicitly() -> None:
    problems = [p for path in _tracked_python() for p in unsafe_loader_calls(path.read_text(), str(path.relative_to(REPO)))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("AutoTokenizer.from_pretrained(d)", "from_pretrained without trust_remote_code=False"),
        ("AutoConfig.from_pretrained(d, trust_remote_code=True)", "without trust_remote_code=False"),
        ("getattr(t, n).from_pretrained(d)", "from_pretrained without"),
        ("SentenceTransformer(d)", "SentenceTransformer without"),
        ("torch.load(f)", "torch.load without weights_only=True"),
        ("torch.load(f, weights_only=flag)", "torch.load without"),
        ("np.load(f)", "np.load without allow_pickle=False"),
        ("pickle.loads(b)", "pickle.loads"),
    ],
)
def test_the_source_check_finds_each_unsafe_call(source: str, expected: str) -> None:
    problems = unsafe_loader_calls(source)
    assert len(problems) == 1 and expected in problems[0], problems
    safe = "m.from_pretrained(d, trust_remote_code=False)\ntorch.load(f, weights_only=True)\nnp.load(f, allow_pickle=False)"
    assert unsafe_loader_calls(safe) == []


def _with_custom_tokenizer_code(model: Path, marker: Path) -> Path:
    """`model` whose tokenizer_config.json names code in the directory that writes `marker` when imported."""
    (model / "evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\nfrom transformers import BertTokenizerFast as EvilTokenizer\n"
    )
    config = json.loads((model / "tokenizer_config.json").read_text())
    config.update(tokenizer_class="EvilTokenizer", auto_map={"AutoTokenizer": ["evil.EvilTokenizer", "evil.EvilTokenizer"]})
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    return model


def test_augmentation_refuses_a_tokenizer_that_names_code(tiny_bert: Path, tmp_path: Path) -> None:
    from edgebert.distill.augment import augment_sentences

    marker = tmp_path / "MARKER"
    model = _with_custom_tokenizer_code(Path(shutil.copytree(tiny_bert, tmp_path / "m")), marker)
    with pytest.raises(UserError, match="auto_map"):
        augment_sentences(model, ["the quick brown fox"], variants=2, p=0.5, k=4, seed=0)
    assert not marker.exists()


def test_pipeline_with_augmentation_refuses_the_teacher_before_any_work(tiny_bert: Path, tmp_path: Path) -> None:
    """The reproduction: `edgebert pipeline` with `augment = 1`, standard input answering y to every question."""
    marker = tmp_path / "MARKER"
    teacher = _with_custom_tokenizer_code(Path(shutil.copytree(tiny_bert, tmp_path / "teacher")), marker)
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("the dog plays,a dog is playing,4.5\nthe cat sleeps,music on stage,0.5\n" * 8)
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        f'name = "evil"\nteacher = "{teacher}"\ncorpus = ["{corpus}"]\n\n[distill]\nstudent_layers = 1\nsteps = 2\n'
        'batch_size = 2\nseq_len = 16\naugment = 1\n\n[export]\ntargets = { onnx = ["none"] }\nseq_len = 16\n'
    )
    out = tmp_path / "out"
    args = [sys.executable, "-m", "edgebert.cli", "pipeline", "--recipe", str(recipe), "--out", str(out), "--work", str(tmp_path / "w")]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(args, input="y\n" * 20, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert done.returncode == 2 and "auto_map" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not marker.exists() and not out.exists()


class _Payload:
    """Unpickling this writes a marker file: what a poisoned checkpoint would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (_touch, (str(self.marker), "ran"))


def _touch(path: str, text: str) -> None:
    Path(path).write_text(text)


def test_resume_refuses_a_checkpoint_pickle_that_runs_code(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A complete checkpoint whose rng_state.pth carries a payload: refused with one line, the payload never runs,
    even with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 (which makes torch unpickle anything a caller does not guard)."""
    import torch

    from edgebert.distill import distill

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"the quick brown fox {i} jumps over the lazy dog" for i in range(40)) + "\n")
    kw = dict(steps=4, batch_size=4, seq_len=16, save_steps=2, student_layers=1, cache_dir=tmp_path / "cache", quiet=True)
    out = tmp_path / "student"

    class Stop(Exception):
        pass

    from transformers import TrainerCallback

    class StopAfterSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
            raise Stop

    with pytest.raises(Stop):
        distill(tiny_bert, corpus, out, callbacks=[StopAfterSave()], **kw)
    checkpoint = out / "checkpoints" / "checkpoint-2"
    marker = tmp_path / "MARKER"
    rng = torch.load(checkpoint / "rng_state.pth", weights_only=False)
    torch.save({**rng, "extra": _Payload(marker)}, checkpoint / "rng_state.pth", pickle_module=pickle)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(UserError, match=r"rng_state\.pth holds more than tensors"):
        distill(tiny_bert, corpus, out, resume=True, **kw)
    assert not marker.exists()
    assert (checkpoint / "rng_state.pth").exists()  # the user's file is reported, not deleted


def test_resume_loads_weights_only_whatever_the_environment_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside `safe_resume` torch loads weights only even when a library call omits weights_only and the environment
    asks for full unpickling; outside, the environment is as it was."""
    import torch

    from edgebert.distill.checkpoints import safe_resume

    marker = tmp_path / "MARKER"
    torch.save({"x": _Payload(marker)}, tmp_path / "p.pt")
    checkpoint = tmp_path / "checkpoint-1"
    checkpoint.mkdir()
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with safe_resume(checkpoint):
        with pytest.raises(pickle.UnpicklingError):
            torch.load(tmp_path / "p.pt")  # a careless caller
    assert not marker.exists()
    assert os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] == "1" and "TORCH_FORCE_WEIGHTS_ONLY_LOAD" not in os.environ
