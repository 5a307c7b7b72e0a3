"""Manifest I/O and atomic output directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebert.artifact import MANIFEST, atomic_output_dir, check_output_dir, read_manifest, write_manifest
from edgebert.errors import UserError


def test_manifest_round_trip(tmp_path: Path) -> None:
    write_manifest(tmp_path, {"kind": "export", "target": "onnx"})
    body = read_manifest(tmp_path)
    assert body["target"] == "onnx" and body["schema_version"] == 1
    assert not list(tmp_path.glob("*.tmp"))


def test_missing_manifest_is_empty(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) == {}


def test_corrupt_manifest_is_user_error(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        read_manifest(tmp_path)


def test_atomic_dir_appears_only_on_success(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with atomic_output_dir(out) as work:
            (work / "half.bin").write_bytes(b"x")
            raise RuntimeError("boom")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # the temp dir is gone too
    with atomic_output_dir(out) as work:
        (work / "done.bin").write_bytes(b"x")
    assert (out / "done.bin").exists()


def test_existing_output_needs_force_and_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(UserError, match="--force"):
        check_output_dir(out, force=False)
    with atomic_output_dir(out, force=True) as work:
        (work / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_empty_existing_dir_is_fine(tmp_path: Path) -> None:
    check_output_dir(tmp_path, force=False)


def test_output_under_a_file_is_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="not writable"):
        check_output_dir(blocker / "out", force=False)
    with pytest.raises(UserError, match="is a file"):
        check_output_dir(blocker, force=True)


def test_manifest_is_json_on_disk(tmp_path: Path) -> None:
    write_manifest(tmp_path, {"files": {"a": 1}})
    assert json.loads((tmp_path / MANIFEST).read_text())["files"] == {"a": 1}
