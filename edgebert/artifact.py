"""Model and export directories: the `edgebert.json` manifest and atomic output directories."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgebert.errors import UserError

MANIFEST = "edgebert.json"
SCHEMA_VERSION = 1


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a directory, or an empty dict when it has none."""
    path = Path(directory) / MANIFEST
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg}); delete it or re-create the directory") from exc


def write_manifest(directory: Path, manifest: dict[str, Any]) -> Path:
    """Write `edgebert.json` into `directory` (write to a temp file, then rename)."""
    path = Path(directory) / MANIFEST
    body = {"schema_version": SCHEMA_VERSION, **manifest}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)
    return path


def check_output_dir(out: Path, force: bool) -> None:
    """Refuse an output directory that exists and is not empty (unless forced) or cannot be written."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a directory; choose another path")
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"--out {out} exists and is not empty; pass --force to replace it or choose another path")
    parent = _existing_ancestor(out.parent)
    if not parent.is_dir():
        raise UserError(f"--out {out} is not writable ({parent} is a file, not a directory); choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"--out {out} is not writable (no write permission on {parent}); choose another path")


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


@contextlib.contextmanager
def atomic_output_dir(out: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temp dir beside `out`; on success move it into place, on any error remove it.

    Nothing is ever left half-written at `out`: an existing `out` is replaced only after the new
    content is complete, and only when `force` is set (checked by `check_output_dir`).
    """
    out = Path(out).absolute()
    check_output_dir(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old / "content")
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def dir_size(directory: Path, files: list[str] | None = None) -> int:
    """Total bytes of `files` in `directory` (all regular files when `files` is None)."""
    directory = Path(directory)
    paths = [directory / f for f in files] if files is not None else [p for p in directory.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in paths)
