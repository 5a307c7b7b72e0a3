"""The model-directory contract (edgebert/modeldir.py): manifest schema and upgrade, pooling, sentence-transformers files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebert.errors import UserError, VerificationError
from edgebert.modeldir import (
    MANIFEST,
    SCHEMA_VERSION,
    Pooling,
    embedding_outputs,
    new_manifest,
    read_manifest,
    resolve_pooling,
    save_model_dir,
    write_manifest,
    write_sentence_transformers,
)

ST = "sentence_transformers.models."
COMMON = ("kind", "step", "name", "parent", "parent_name", "parent_manifest", "task", "outputs", "recipe", "metrics", "model")


def _manifest(**extra: object) -> dict:
    m = new_manifest(
        "model", "compress", "small", "/models/teacher", {"name": "teacher"}, recipe={"prune_heads": 0.5},
        model={"family": "bert", "pooling": "mean", "hidden_size": 32}, outputs=embedding_outputs(32),
        metrics={"cosine_to_source": {"mean": 0.99}},
    )  # fmt: skip
    return {**m, **extra}


def _write_raw(directory: Path, body: object) -> None:
    (directory / MANIFEST).write_text(json.dumps(body))


# ------------------------------------------------------------------------------------------------ manifest I/O


def test_manifest_round_trip(tmp_path: Path) -> None:
    written = _manifest(pruning={"heads_per_layer": {"after": [2, 2]}})
    write_manifest(tmp_path, written)
    body = read_manifest(tmp_path)
    assert body == {**written, "schema_version": SCHEMA_VERSION}
    assert body["parent"] == "/models/teacher" and body["parent_name"] == "teacher" and body["task"] == "feature-extraction"
    assert body["outputs"][0] == {"name": "sentence_embedding", "dim": 32, "normalized": True}
    assert body["metrics"] == {"wall_time_s": None, "model_bytes": None, "cosine_to_source": {"mean": 0.99}}
    assert not list(tmp_path.glob("*.tmp"))


def test_missing_manifest_is_empty(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) == {}


@pytest.mark.parametrize(("text", "match"), [("{not json", "not valid JSON"), ("[1, 2]", "must hold a JSON object")])
def test_corrupt_manifest_is_user_error(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / MANIFEST).write_text(text)
    with pytest.raises(UserError, match=match):
        read_manifest(tmp_path)


def test_manifest_refuses_nan(tmp_path: Path) -> None:
    with pytest.raises(VerificationError, match=r"parity\.min_cosine is NaN"):
        write_manifest(tmp_path, _manifest(parity={"min_cosine": float("nan")}))
    with pytest.raises(VerificationError, match=r"x\.1 is NaN or infinite"):
        write_manifest(tmp_path, _manifest(x=[1.0, float("inf")]))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("kind", "step"), [("student", "distill"), ("model", "trim_vocab"), (None, "export")])
def test_only_the_schema_kinds_and_steps_are_written(tmp_path: Path, kind: object, step: str) -> None:
    with pytest.raises(ValueError, match="kind in"):
        write_manifest(tmp_path, _manifest(kind=kind, step=step))
    assert not (tmp_path / MANIFEST).exists()


# ------------------------------------------------------------------------------------- schema 1 manifests


def test_old_student_manifest_reads_as_a_distill_model(tmp_path: Path) -> None:
    _write_raw(tmp_path, {
        "schema_version": 1, "kind": "student", "name": "s", "model": {"hidden_size": 16, "pooling": "cls"},
        "lineage": {"teacher": "/t", "teacher_name": "mini", "teacher_fingerprint": "abc", "recipe": {"steps": 4},
                    "steps": 4, "init": {"kind": "copy"}, "resumed_from": None},
        "metrics": {"wall_time_s": 1.5, "sts_spearman": None},
    })  # fmt: skip
    m = read_manifest(tmp_path)
    assert (m["kind"], m["step"], m["parent"], m["parent_name"]) == ("model", "distill", "/t", "mini")
    assert m["recipe"] == {"steps": 4} and "lineage" not in m
    assert m["distill"] == {"teacher_fingerprint": "abc", "steps": 4, "init": {"kind": "copy"}, "resumed_from": None}
    assert m["metrics"]["wall_time_s"] == 1.5 and m["task"] == "feature-extraction"
    assert m["outputs"] == embedding_outputs(16) and m["schema_version"] == SCHEMA_VERSION
    assert set(COMMON) - {"parent_manifest"} <= set(m)


def test_old_compress_and_trim_manifests_read_with_their_parent_upgraded(tmp_path: Path) -> None:
    student = {"kind": "student", "name": "s", "lineage": {"teacher": "/t", "recipe": {}}}
    pruned = {"kind": "model", "name": "p", "model_bytes": 10, "wall_time_s": 2.0, "metrics": {"cosine_to_source": {}},
              "lineage": {"step": "compress", "source": "/s", "source_name": "s", "source_manifest": student, "recipe": {"prune_ffn": 0.5}},
              "pruning": {"pruned_heads": {}}}  # fmt: skip
    _write_raw(tmp_path, {"kind": "model", "source_model_bytes": 10, "model_bytes": 8,
                          "lineage": {"step": "trim_vocab", "source": "/p", "source_name": "p", "source_manifest": pruned, "recipe": {}}})  # fmt: skip
    m = read_manifest(tmp_path)
    assert (m["kind"], m["step"], m["parent"], m["parent_name"]) == ("model", "trim", "/p", "p")
    assert m["metrics"] == {"parent_model_bytes": 10, "model_bytes": 8}
    parent = m["parent_manifest"]
    assert (parent["step"], parent["parent"], parent["recipe"]) == ("compress", "/s", {"prune_ffn": 0.5})
    assert parent["metrics"] == {"cosine_to_source": {}, "model_bytes": 10, "wall_time_s": 2.0} and parent["pruning"] == {"pruned_heads": {}}
    assert parent["parent_manifest"]["step"] == "distill" and parent["parent_manifest"]["parent"] == "/t"


def test_old_export_manifest_reads_with_source_as_parent(tmp_path: Path) -> None:
    _write_raw(tmp_path, {"kind": "export", "target": "onnx", "seq_len": 32, "wall_time_s": 3.0, "model_bytes": 7,
                          "stage_times_s": {"a": 1}, "source": {"path": "/m", "manifest": None}, "parity": {"min_cosine": 1.0}})  # fmt: skip
    m = read_manifest(tmp_path)
    assert (m["kind"], m["step"], m["parent"], m["parent_name"], m["parent_manifest"]) == ("export", "export", "/m", "m", None)
    assert m["metrics"] == {"wall_time_s": 3.0, "model_bytes": 7, "stage_times_s": {"a": 1}}
    assert m["target"] == "onnx" and m["parity"] == {"min_cosine": 1.0} and "source" not in m


def test_an_old_manifest_without_kind_but_a_target_is_an_export(tmp_path: Path) -> None:
    _write_raw(tmp_path, {"target": "tflite"})
    assert read_manifest(tmp_path)["kind"] == "export"


# ------------------------------------------------------------------------------------------------- pooling


def _st_dir(directory: Path, flags: dict, modules: list | None = None, pool_path: str = "1_Pooling") -> Path:
    (directory / pool_path).mkdir(parents=True, exist_ok=True)
    (directory / pool_path / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **flags}))
    modules = modules if modules is not None else [
        {"idx": 0, "name": "0", "path": "", "type": ST + "Transformer"},
        {"idx": 1, "name": "1", "path": pool_path, "type": ST + "Pooling"},
    ]  # fmt: skip
    (directory / "modules.json").write_text(json.dumps(modules))
    return directory


@pytest.mark.parametrize(("flag", "mode"), [("pooling_mode_mean_tokens", "mean"), ("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max")])
def test_pooling_of_a_sentence_transformers_dir(tmp_path: Path, flag: str, mode: str) -> None:
    flags = {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False, flag: True, "include_prompt": True}
    _st_dir(tmp_path, flags, pool_path="pool")
    _write_raw(tmp_path, _manifest(model={"pooling": "max" if mode != "max" else "cls"}))  # the ST stack wins
    pooling = resolve_pooling(tmp_path, "mean")
    assert (pooling.mode, pooling.source, pooling.normalize) == (mode, "sentence-transformers", False)
    assert pooling.config == {"word_embedding_dimension": 32, **flags}  # the whole config, for modes added later


def test_pooling_from_the_manifest_then_the_family_default(tmp_path: Path) -> None:
    assert resolve_pooling(tmp_path, "cls") == Pooling.of_mode("cls", source="family default")
    write_manifest(tmp_path, _manifest(model={"pooling": "max"}))
    pooling = resolve_pooling(tmp_path, "cls")
    assert (pooling.mode, pooling.source) == ("max", "manifest")
    assert pooling.config["pooling_mode_max_tokens"] is True and pooling.config["pooling_mode_mean_tokens"] is False


def test_a_lone_pooling_config_without_modules_json_is_read(tmp_path: Path) -> None:
    _st_dir(tmp_path, {"pooling_mode_cls_token": True})
    (tmp_path / "modules.json").unlink()
    assert resolve_pooling(tmp_path, "mean").mode == "cls"


@pytest.mark.parametrize(
    ("modules", "match"),
    [
        ("{not json", "cannot read .*modules.json \\(JSONDecodeError\\)"),
        ('{"type": "x"}', "modules.json must hold a JSON list"),
        ('[{"path": "1_Pooling"}]', "is not one edgebert can export"),
        (json.dumps([{"path": "", "type": ST + "Transformer"}, {"path": "2_Dense", "type": ST + "Dense"}]), "got Transformer → Dense"),
        (json.dumps([{"path": "", "type": ST + "Transformer"}, {"path": "x", "type": ST + "LSTM"}]), "LSTM' is not one edgebert can export"),
        (json.dumps([{"path": "", "type": ST + "Transformer"}, {"path": "missing", "type": ST + "Pooling"}]), "cannot read .*missing/config.json"),
    ],
)
def test_a_bad_modules_json_is_one_clear_user_error(tmp_path: Path, modules: str, match: str) -> None:
    _st_dir(tmp_path, {"pooling_mode_mean_tokens": True})
    (tmp_path / "modules.json").write_text(modules)
    with pytest.raises(UserError, match=match) as info:
        resolve_pooling(tmp_path, "mean")
    assert "\n" not in str(info.value)


def test_weightedmean_is_one_pooling_mode(tmp_path: Path) -> None:
    _st_dir(tmp_path, {"pooling_mode_weightedmean_tokens": True})
    assert resolve_pooling(tmp_path, "mean").mode == "weightedmean"


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        ({"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True}, "max \\+ mean pooling, 0 Dense.* not yet by distill"),
        ({"pooling_mode_mean_tokens": False}, "selects no pooling mode"),
    ],
)
def test_a_pooling_the_embedder_cannot_reproduce_is_refused(tmp_path: Path, flags: dict, match: str) -> None:
    _st_dir(tmp_path, flags)
    with pytest.raises(UserError, match=match):
        resolve_pooling(tmp_path, "mean")


def test_an_unknown_pooling_in_the_manifest_is_refused(tmp_path: Path) -> None:
    write_manifest(tmp_path, _manifest(model={"pooling": "weird"}))
    with pytest.raises(UserError, match="names pooling 'weird'"):
        resolve_pooling(tmp_path, "mean")


# ------------------------------------------------------------------------------------ sentence-transformers files


def test_new_stack_keeps_the_parents_pooling_config_and_settings(tmp_path: Path) -> None:
    parent = _st_dir(tmp_path / "parent", {"pooling_mode_cls_token": True, "include_prompt": True})
    (parent / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    out = tmp_path / "out"
    out.mkdir()
    write_sentence_transformers(out, resolve_pooling(parent, "mean"), 16, parent, seq_len=64)
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"].removeprefix(ST) for m in modules] == ["Transformer", "Pooling", "Normalize"]
    assert json.loads((out / "1_Pooling" / "config.json").read_text()) == {
        "word_embedding_dimension": 16, "pooling_mode_cls_token": True, "include_prompt": True,
    }  # fmt: skip
    assert json.loads((out / "sentence_bert_config.json").read_text()) == {"max_seq_length": 256, "do_lower_case": False}
    assert (out / "2_Normalize").is_dir()
    pooling = resolve_pooling(out, "mean")  # what it wrote reads back
    assert (pooling.mode, pooling.normalize) == ("cls", True)


def test_a_family_default_stack_is_what_sentence_transformers_writes(tmp_path: Path) -> None:
    write_sentence_transformers(tmp_path, Pooling.of_mode("mean"), 8, tmp_path / "no-parent", seq_len=32)
    assert json.loads((tmp_path / "1_Pooling" / "config.json").read_text()) == {
        "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": False,
        "word_embedding_dimension": 8,
    }  # fmt: skip
    assert json.loads((tmp_path / "sentence_bert_config.json").read_text()) == {"max_seq_length": 32, "do_lower_case": False}


class _Saves:
    def save_pretrained(self, directory: object, **_: object) -> None:
        Path(directory, "saved").write_text("x")


def test_save_carries_the_parents_files_over_unchanged(tmp_path: Path) -> None:
    parent = _st_dir(tmp_path / "parent", {"pooling_mode_max_tokens": True, "custom": 1})
    (parent / "config_sentence_transformers.json").write_text('{"prompts": {}}')
    out = tmp_path / "out"
    out.mkdir()
    save_model_dir(out, _Saves(), _Saves(), parent)
    for name in ("modules.json", "1_Pooling/config.json", "config_sentence_transformers.json"):
        assert (out / name).read_bytes() == (parent / name).read_bytes()
    bare = tmp_path / "bare"
    bare.mkdir()
    save_model_dir(bare, _Saves(), _Saves(), tmp_path / "plain")  # a parent without them: none written
    assert sorted(p.name for p in bare.iterdir()) == ["saved"]
