"""Trainer checkpoints a distillation resumes from: which one is complete, and that loading it runs no code.

transformers' Trainer restores optimizer, scheduler and RNG state with `torch.load`. transformers 5 passes
`weights_only=True`, but an older line or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` in the environment would unpickle
arbitrary objects, so edgebert screens every pickle of the checkpoint with `weights_only=True` itself before the
resume and forces weights-only loading while the Trainer reads them."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgebert.errors import UserError

# written by the Trainer but never read back when resuming (a pickled TrainingArguments object)
UNREAD_PICKLES = frozenset({"training_args.bin"})
PICKLE_SUFFIXES = (".pt", ".pth", ".bin")


def checkpoint_problem(checkpoint: Path) -> str | None:
    """Why a Trainer checkpoint cannot be resumed from (a file missing or unreadable), or None when complete."""
    import zipfile

    from safetensors import safe_open

    state = checkpoint / "trainer_state.json"
    try:
        json.loads(state.read_text())["global_step"]
    except (OSError, ValueError, KeyError, TypeError):
        return "trainer_state.json is missing or unreadable"
    try:
        with safe_open(str(checkpoint / "model.safetensors"), framework="pt") as fh:
            list(fh.keys())
    except Exception:  # noqa: BLE001 - missing, truncated or corrupt files raise many types
        return "model.safetensors is missing or unreadable"
    for name in ("optimizer.pt", "scheduler.pt"):
        try:
            with zipfile.ZipFile(checkpoint / name) as zf:
                if zf.testzip() is not None:
                    return f"{name} is corrupt"
        except (OSError, zipfile.BadZipFile):
            return f"{name} is missing or unreadable"
    return None


def last_complete_checkpoint(checkpoint_dir: Path, log: Any) -> Path | None:
    """The newest complete `checkpoint-N` in `checkpoint_dir`; incomplete newer ones (a kill while saving) are
    removed, saying so, so that the resumed run writes its own. None (saying so) when none is complete."""
    found = []
    for entry in Path(checkpoint_dir).iterdir():
        step = entry.name.removeprefix("checkpoint-")
        if entry.is_dir() and entry.name.startswith("checkpoint-") and step.isdigit():
            found.append((int(step), entry))
    for _, checkpoint in sorted(found, reverse=True):
        problem = checkpoint_problem(checkpoint)
        if problem is None:
            log(f"resuming from {checkpoint}")
            return checkpoint
        log(f"skipping the incomplete checkpoint {checkpoint} ({problem}); removing it")
        shutil.rmtree(checkpoint, ignore_errors=True)
    log(f"no complete checkpoint in {checkpoint_dir}; starting over from step 0")
    return None


def refuse_unsafe_pickles(checkpoint: Path) -> None:
    """UserError when a pickle the Trainer would read back from `checkpoint` holds more than tensors and plain data
    (what `torch.load(weights_only=True)` accepts): it could run code, so edgebert does not resume from it."""
    import pickle

    import torch
    from transformers.trainer_pt_utils import safe_globals  # the numpy RNG-state types the Trainer allows too

    for path in sorted(checkpoint.iterdir()):
        if path.suffix not in PICKLE_SUFFIXES or path.name in UNREAD_PICKLES:
            continue
        try:
            with safe_globals():
                torch.load(path, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, TypeError, AttributeError, ValueError, EOFError) as exc:
            raise UserError(
                f"{path} holds more than tensors ({type(exc).__name__}), so loading it could run code: edgebert does not "
                f"resume from it; delete {checkpoint.parent} (or run without --resume) to start over"
            ) from None


@contextlib.contextmanager
def safe_resume(checkpoint: Path | None) -> Iterator[None]:
    """Screen `checkpoint`'s pickles, then hold torch to weights-only loading (whatever the environment says)
    while the Trainer resumes from it."""
    if checkpoint is None:
        yield
        return
    refuse_unsafe_pickles(checkpoint)
    saved = {k: os.environ.pop(k, None) for k in ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_WEIGHTS_ONLY_LOAD")}
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        yield
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value
