"""Output directories of every verb: checks that an output never overlaps an input, and atomic replacement.

(What goes inside a model or export directory, `edgebert.json` included, is `edgebert.modeldir`'s.)"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Union

from edgebert.errors import UserError

PathLike = Union[str, Path]
# The inputs of a verb by flag, e.g. {"--teacher": dir, "--corpus": [file, ...]}; None and hub ids are skipped.
Inputs = Mapping[str, Union[PathLike, Iterable[PathLike], None]]


def real_path(path: PathLike) -> Path:
    """`path` made absolute with `~`, `..` and symlinked parents resolved (a symlink at the end is kept)."""
    path = Path(path).expanduser().absolute()
    if path.is_symlink():
        return path.parent.resolve() / path.name
    return path.resolve()


def _input_paths(inputs: Inputs | None) -> Iterator[tuple[str, Path]]:
    """(flag, resolved path) of every input that exists on disk (a hub id or a missing file cannot be lost)."""
    for flag, value in (inputs or {}).items():
        if value is None:
            continue
        values = [value] if isinstance(value, (str, os.PathLike)) else list(value) if isinstance(value, (list, tuple)) else []
        for v in values:  # a value of another type is not a path: its own check reports it
            if not isinstance(v, (str, os.PathLike)) or not Path(v).expanduser().exists():
                continue
            yield flag, Path(v).expanduser().resolve()


def check_not_input(out: PathLike, inputs: Inputs | None, flag: str = "--out") -> None:
    """UserError when `out` is, contains or sits inside any input: the inputs are never at risk."""
    target = Path(out).expanduser().resolve()
    for name, path in _input_paths(inputs):
        if target == path:
            how = f"is the {name} {path}"
        elif target in path.parents:
            how = f"contains the {name} {path}"
        elif path in target.parents:
            how = f"is inside the {name} {path}"
        else:
            continue
        raise UserError(f"{flag} {out} {how}; an output must not overlap an input, choose another path")


def check_output_dir(out: Path, force: bool, inputs: Inputs | None = None, flag: str = "--out") -> None:
    """Refuse an output directory that overlaps an input, exists and is not empty (unless forced), or cannot
    be written. `inputs` maps flags to the paths the verb reads (see `check_not_input`)."""
    out = Path(out)
    if out.is_symlink() and not out.exists():  # dangling, or a loop
        raise UserError(f"{flag} {out} is a symbolic link to nothing (dangling or a loop); remove it or choose another path")
    check_not_input(out, inputs, flag)
    if out.exists() and not out.is_dir():
        raise UserError(f"{flag} {out} is a file, not a directory; choose another path")
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{flag} {out} exists and is not empty; pass --force to replace it or choose another path")
    parent = _existing_ancestor(out.parent)
    if not parent.is_dir():
        raise UserError(f"{flag} {out} is not writable ({parent} is a file, not a directory); choose another path")
    if not os.access(parent, os.W_OK | os.X_OK) or not _can_create_in(parent):
        raise UserError(f"{flag} {out} is not writable (cannot create anything in {parent}); choose another path")


def _can_create_in(directory: Path) -> bool:
    """Whether a directory can really be created in `directory` (os.access says yes to root on /proc)."""
    try:
        probe = tempfile.mkdtemp(prefix=".edgebert-probe-", dir=directory)
    except OSError:
        return False
    os.rmdir(probe)
    return True


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def _pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (a process we may not signal still exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sibling_pattern(name: str) -> re.Pattern[str]:
    """`.NAME.{tmp,old,pruned}-<pid>-<rand>`: the temp dirs edgebert makes beside an output NAME."""
    return re.compile(rf"^\.{re.escape(name)}\.(?:tmp|old|pruned)-(\d+)-[^/]*$")


def remove_stale_siblings(out: Path) -> list[Path]:
    """Remove temp dirs beside `out` left by a killed run for the same name (only when their PID is dead)."""
    out = Path(out)
    pattern = _sibling_pattern(out.name)
    removed = []
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match and entry.is_dir() and not entry.is_symlink() and not _pid_alive(int(match.group(1))):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _make_temp_dir(out: Path, kind: str) -> Path:
    """`.OUT.<kind>-<pid>-<rand>` beside `out`, with the mode a plain mkdir would give (mkdtemp gives 0700)."""
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.{kind}-{os.getpid()}-", dir=out.parent))
    except OSError as exc:
        raise UserError(f"--out {out} is not writable ({exc.strerror}); choose another path") from exc
    os.chmod(tmp, 0o777 & ~_umask())
    return tmp


@contextlib.contextmanager
def atomic_output_dir(out: Path, force: bool = False, inputs: Inputs | None = None) -> Iterator[Path]:
    """Yield a temp dir beside `out`; on success move it into place, on any error remove it.

    Nothing is ever left half-written at `out`: an existing `out` is replaced only after the new
    content is complete, and only when `force` is set (checked by `check_output_dir`, with `inputs`).
    Temp dirs of the same name left by a killed run (their PID is dead) are removed first.
    """
    out = real_path(out)
    check_output_dir(out, force, inputs)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {out} is not writable ({exc.strerror}); choose another path") from exc
    remove_stale_siblings(out)
    tmp = _make_temp_dir(out, "tmp")
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        old = _make_temp_dir(out, "old")
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


def report_json(data: object) -> str:
    """`data` as indented JSON that every parser reads: a NaN or infinite number (a statistic that could not be
    computed, e.g. a Spearman correlation of constant scores) is written as null, not as the non-standard NaN."""
    import json
    import math

    def finite(value: object) -> object:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(data), indent=2, default=str, allow_nan=False) + "\n"
