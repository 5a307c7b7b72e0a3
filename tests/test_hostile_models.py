"""Hostile model directories, output paths and bench inputs: each is one line and exit 2 before any work, with
nothing written (a full disk: one line, exit 1, nothing left behind)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from model_zoo import add_st_stack, build_albert, build_bert

from edgebert.errors import UserError

REPO = Path(__file__).resolve().parents[1]
Cli = Callable[..., tuple[int, str, str]]


def assert_refused(code: int, err: str, fragment: str, out: Path, expected: int = 2) -> None:
    """One line holding `fragment`, exit `expected`, no traceback, `out` not created and no temp dir beside it."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == expected and len(lines) == 1 and fragment in lines[0] and "Traceback" not in err, err
    assert not out.exists() and not list(out.parent.glob(f".{out.name}.tmp-*")), sorted(out.parent.iterdir())


def _edit_json(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bert(tmp_path_factory.mktemp("cls") / "m", head="sequence-classification", num_labels=3)


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers stack with a Dense layer (32 -> 16)."""
    return add_st_stack(build_bert(tmp_path_factory.mktemp("st") / "m"), pooling="mean", dense_out=16)


def _copy(model: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(model, tmp_path / "model"))


def _export(run_cli: Cli, model: Path, out: Path) -> tuple[int, str, str]:
    return run_cli("export", "--model", str(model), "--target", "onnx", "--out", str(out), "--seq-len", "16")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"id2label": {"a": "x", "b": "y", "c": "z"}}, "id2label keys must be label ids"),
        ({"id2label": {"0": "x", "2": "y"}, "label2id": {"x": 0, "y": 2}}, "id2label must number its labels 0..1"),
        ({"num_labels": 5}, "num_labels is 5 but id2label names 3 labels"),
    ],
)
def test_a_classifier_config_that_contradicts_itself_is_refused(
    run_cli: Cli, classifier: Path, tmp_path: Path, change: dict[str, object], fragment: str
) -> None:
    model = _copy(classifier, tmp_path)
    _edit_json(model / "config.json", **change)
    code, _, err = _export(run_cli, model, tmp_path / "out")
    assert_refused(code, err, fragment, tmp_path / "out")


def _pooling_mode_number(model: Path) -> None:
    _edit_json(next(model.glob("*Pooling/config.json")), pooling_mode=5)


def _dense_weight_1d(model: Path) -> None:
    from safetensors.numpy import load_file, save_file

    weights = next(model.glob("*Dense")) / "model.safetensors"
    tensors = load_file(str(weights))
    tensors["linear.weight"] = tensors["linear.weight"][0]
    save_file(tensors, str(weights))


def _dense_weights_as_pickle(model: Path) -> None:
    dense = next(model.glob("*Dense"))
    (dense / "model.safetensors").unlink()
    (dense / "pytorch_model.bin").write_bytes(pickle.dumps({"linear.weight": object()}))


def _prompts_as_list(model: Path) -> None:
    _edit_json(model / "config_sentence_transformers.json", prompts=["query: "])


def _layers(count: int) -> Callable[[Path], None]:
    return lambda model: _edit_json(model / "config.json", num_hidden_layers=count)


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [
        (_pooling_mode_number, "pooling_mode must be a mode name or a list of them, got 5"),
        (_dense_weight_1d, "linear.weight has shape [32], not [out_features, in_features] = [16, 32]"),
        (_dense_weights_as_pickle, "is not a plain tensor file (UnpicklingError)"),
        (_prompts_as_list, "prompts must map prompt names to prompt texts, got list"),
        (_layers(0), "hold encoder layers its config.json does not declare"),
        (_layers(1), "(e.g. encoder.layer.1."),
    ],
    ids=["pooling-mode-5", "dense-1d", "dense-pickle", "prompts-list", "layers-0-of-2", "layers-1-of-2"],
)
def test_a_damaged_sentence_stack_is_refused_by_export(
    run_cli: Cli, embedder: Path, tmp_path: Path, damage: Callable[[Path], None], fragment: str
) -> None:
    model = _copy(embedder, tmp_path)
    damage(model)
    code, _, err = _export(run_cli, model, tmp_path / "out")
    assert_refused(code, err, fragment, tmp_path / "out")


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_an_out_that_is_a_broken_symlink_is_refused(run_cli: Cli, tiny_bert: Path, tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere" / "x" if kind == "dangling" else out)
    code, _, err = _export(run_cli, tiny_bert, out)
    assert code == 2 and "symbolic link to nothing" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(f"the quick brown fox {i} jumps over the lazy dog" for i in range(30)) + "\n")
    return path


def _pickle_only(model: Path) -> None:
    (model / "model.safetensors").unlink()
    (model / "pytorch_model.bin").write_bytes(pickle.dumps({"x": 1}))


@pytest.mark.parametrize(
    ("teacher", "damage", "fragment"),
    [
        ("embedder", _pooling_mode_number, "pooling_mode must be"),
        ("tiny_bert", _pickle_only, "cannot load the weights"),
        ("albert", lambda m: _edit_json(m / "config.json", num_hidden_groups=2), "is missing 16 tensors"),
    ],
    ids=["pooling-mode-5", "pickle-only", "albert-2-groups"],
)
def test_a_refused_teacher_leaves_no_distill_output(
    run_cli: Cli, request: pytest.FixtureRequest, tmp_path: Path, teacher: str, damage: Callable[[Path], None], fragment: str
) -> None:
    source = build_albert(tmp_path / "albert") if teacher == "albert" else request.getfixturevalue(teacher)
    model = Path(shutil.copytree(source, tmp_path / "teacher"))
    damage(model)
    out = tmp_path / "student"
    code, _, err = run_cli(
        "distill", "--teacher", str(model), "--corpus", str(_corpus(tmp_path)), "--out", str(out), "--steps", "2",
        "--student-layers", "1",
    )
    last = err.splitlines()[-1]  # distill logs its plan before it loads the teacher
    assert code == 2 and last.startswith("edgebert: error:") and fragment in last and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == sorted(["teacher", "corpus.txt"] + (["albert"] if teacher == "albert" else []))


def _late_binary(path: Path, line: bytes, count: int) -> Path:
    path.write_bytes(line * count + b"\xff\xfe\n")
    return path


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (lambda d: ["--sst2", str(_late_binary(d / "s.tsv", b"a good film\t1\n", 200_000))], "is not UTF-8 text (bad byte at offset 2800000)"),
        (lambda d: ["--texts", str(_late_binary(d / "t.txt", b"hello world\n", 200_000))], "is not UTF-8 text"),
        (lambda d: ["--texts", str((d / "blank.txt", (d / "blank.txt").write_text("  \n\n"))[0])], "is empty"),
        (lambda d: ["--seq-len", "16,100000"], "--seq-len 100000 is longer than"),
    ],
    ids=["sst2-late-binary", "texts-late-binary", "texts-blank", "seq-len-too-long"],
)
def test_bench_refuses_bad_inputs_before_the_first_item(
    run_cli: Cli, tiny_bert: Path, tmp_path: Path, args: Callable[[Path], list[str]], fragment: str
) -> None:
    out = tmp_path / "report"
    code, _, err = run_cli("bench", str(tiny_bert), "--out", str(out), "--repeats", "1", "--warmup", "0", "--in-process", *args(tmp_path))
    assert_refused(code, err, fragment, out)


def test_a_text_file_is_checked_to_its_end(tmp_path: Path) -> None:
    from edgebert import validate

    with pytest.raises(UserError, match="bad byte at offset 2400000"):
        validate.text_file("corpus file", _late_binary(tmp_path / "late.txt", b"hello world\n", 200_000))
    (tmp_path / "nul.txt").write_bytes(b"text\n" * 300_000 + b"\x00")
    with pytest.raises(UserError, match="holds NUL bytes"):
        validate.text_file("corpus file", tmp_path / "nul.txt")


def test_an_interrupt_without_a_message_still_says_what_happened(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from edgebert import cli
    from edgebert.commands.export import ExportCommand

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(ExportCommand, "run", staticmethod(interrupted))
    code = cli.main(["export", "--model", "x", "--target", "onnx", "--out", "y"])
    assert code == 130 and capsys.readouterr().err == "edgebert: interrupted; nothing was left half-written\n"


def test_a_full_disk_is_one_line_and_leaves_nothing(tiny_bert: Path, tmp_path: Path) -> None:
    """A 64 kB file-size limit (what a full disk looks like to a writer: EFBIG/ENOSPC) while exporting."""
    code = (
        "import resource, sys\nresource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))\n"
        "from edgebert.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "out"
    args = [sys.executable, "-c", code, "export", "--model", str(tiny_bert), "--target", "onnx", "--out", str(out), "--seq-len", "16"]
    done = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "out of disk space" in last and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a partial export was left behind"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (lambda d: ["--sts", str((d / "big.csv", (d / "big.csv").write_text("a" * 200_000 + ",b,3\nx,y,2\n"))[0])], "is not a readable CSV"),
        (lambda d: ["--texts", str((d / "t.txt.gz", (d / "t.txt.gz").write_bytes(__import__("gzip").compress(b"hello world\n" * 10000)[:200]))[0])],
         "cannot read --texts"),
    ],
    ids=["sts-200kB-field", "texts-truncated-gz"],
)
def test_bench_refuses_unreadable_data_up_front(run_cli: Cli, tiny_bert: Path, tmp_path: Path, args: Callable[[Path], list[str]], fragment: str) -> None:
    out = tmp_path / "report"
    code, _, err = run_cli("bench", str(tiny_bert), "--out", str(out), "--repeats", "1", "--warmup", "0", "--in-process", *args(tmp_path))
    assert_refused(code, err, fragment, out)


def test_a_classifier_teacher_whose_head_does_not_fit_leaves_no_distill_output(classifier: Path, tmp_path: Path, run_cli: Cli) -> None:
    """config.json says 5 labels (id2label too) while the weights hold a 3-label head: refused at the load, no --out."""
    model = _copy(classifier, tmp_path)
    labels = {str(i): f"L{i}" for i in range(5)}
    _edit_json(model / "config.json", num_labels=5, id2label=labels, label2id={v: int(k) for k, v in labels.items()})
    out = tmp_path / "student"
    code, _, err = run_cli("distill", "--teacher", str(model), "--corpus", str(_corpus(tmp_path)), "--out", str(out), "--steps", "2", "--student-layers", "1")
    assert code == 2 and "edgebert: error:" in err.splitlines()[-1] and "Traceback" not in err, err
    assert not out.exists()


def test_a_damaged_teacher_cache_leaves_no_distill_output(tiny_bert: Path, tmp_path: Path) -> None:
    """A cache entry whose offsets do not match the corpus (a damaged entry) is refused after --out was made: the
    refusal removes what this run created."""
    import numpy as np

    from edgebert.distill import distill

    corpus, cache = _corpus(tmp_path), tmp_path / "teacher-cache"
    kw = dict(steps=2, batch_size=4, seq_len=16, student_layers=1, cache_dir=tmp_path / "cache", teacher_cache=cache, quiet=True)
    distill(tiny_bert, corpus, tmp_path / "first", **kw)
    entry = next(p.parent for p in cache.rglob("meta.json"))
    np.save(entry / "offsets.npy", np.load(entry / "offsets.npy", allow_pickle=False)[:-1])
    with pytest.raises(UserError, match="does not match this corpus"):
        distill(tiny_bert, corpus, tmp_path / "second", **kw)
    assert not (tmp_path / "second").exists()
