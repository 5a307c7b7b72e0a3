"""Output directories: never overlapping an input, atomic replacement (the manifest is test_modeldir's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebert.artifact import atomic_output_dir, check_output_dir
from edgebert.errors import UserError


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


# ----------------------------------------------------------------------------------------- inputs are never at risk


def test_output_may_not_overlap_an_input(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "w.bin").write_text("weights")
    for out, how in ((model, "is the"), (model / "sub" / "..", "is the"), (tmp_path, "contains the"), (model / "sub" / "out", "is inside the")):
        with pytest.raises(UserError, match=how):
            check_output_dir(out, force=True, inputs={"--model": model})
    link = tmp_path / "link"
    link.symlink_to(model)
    with pytest.raises(UserError, match="is the --model"):
        check_output_dir(link, force=True, inputs={"--model": str(model)})
    (tmp_path / "c.txt").write_text("x")
    with pytest.raises(UserError, match="is the --corpus"):
        check_output_dir(tmp_path / "c.txt", force=True, inputs={"--corpus": [None, "hub/id", tmp_path / "c.txt"]})
    check_output_dir(tmp_path / "elsewhere", force=True, inputs={"--model": model, "--teacher": "some/hub-id", "--x": None})
    assert (model / "w.bin").read_text() == "weights"


def test_atomic_dir_resolves_dotdot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "X").mkdir()
    (tmp_path / "X" / "old.txt").write_text("old")
    with atomic_output_dir(Path("X/../X"), force=True) as work:
        (work / "new.txt").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X"]
    assert [p.name for p in (tmp_path / "X").iterdir()] == ["new.txt"]


def test_unwritable_output_is_one_user_error() -> None:
    with pytest.raises(UserError, match="not writable"):
        check_output_dir(Path("/proc/x"), force=False)
    with pytest.raises(UserError, match="not writable"):
        with atomic_output_dir(Path("/proc/x")):
            pass


def test_output_dir_gets_the_umask_mode(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        with atomic_output_dir(tmp_path / "out") as work:
            (work / "f").write_text("x")
    finally:
        os.umask(old)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o755


def test_stale_temp_dirs_of_dead_runs_are_removed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    stale = [tmp_path / f".out.tmp-{dead}-abc", tmp_path / f".out.old-{dead}-def", tmp_path / f".out.pruned-{dead}-g"]
    kept = [tmp_path / f".out.tmp-{os.getpid()}-live", tmp_path / f".other.tmp-{dead}-x", tmp_path / ".out.tmp-nopid"]
    for d in stale + kept:
        (d / "big").mkdir(parents=True)
    with atomic_output_dir(tmp_path / "out") as work:
        assert work.name.startswith(f".out.tmp-{os.getpid()}-")
    assert not any(d.exists() for d in stale)
    assert all(d.exists() for d in kept)


def test_report_json_writes_non_finite_numbers_as_null() -> None:
    import json

    from edgebert.artifact import report_json

    text = report_json({"spearman": float("nan"), "rows": [1.5, float("inf"), {"x": -float("inf")}], "ok": (1, "a")})
    assert json.loads(text) == {"spearman": None, "rows": [1.5, None, {"x": None}], "ok": [1, "a"]}
    assert "NaN" not in text and "Infinity" not in text
