"""Pruning, then vocabulary trimming, in one call (`edgebert compress ... --trim-vocab`): the one copy of that chain.

The pruned model is written to a scratch directory beside `out`, trimmed into `out`, and the scratch directory is
removed. The pipeline keeps the two as separate, resumable stages with their own directories instead.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert.config import VocabConfig


@dataclass
class TrimRequest:
    """Vocabulary trimming after pruning: the corpus and the `trim_vocab` options."""

    corpus: list[str]
    min_count: int = VocabConfig.min_count
    max_size: int | None = VocabConfig.max_size
    heldout: str | None = None


def compress_then_trim(
    model: str | Path | None, out: str | Path, trim: TrimRequest, inputs: dict[str, Any], **compress_options: Any
) -> tuple[Any, Any]:
    """Prune `model` (edgebert.compress options) and trim the result's vocabulary into `out`; both reports.

    `inputs`: the command's input paths by flag, so that `out` is refused up front if it would overwrite one.
    The trimmed manifest's `parent` is null (the pruned model is not kept); its `parent_manifest` is the pruned
    model's manifest, whose `parent` is `model`.
    """
    from edgebert.artifact import check_output_dir
    from edgebert.compress.compress import compress
    from edgebert.compress.vocab import trim_vocab

    force, quiet = bool(compress_options.get("force")), bool(compress_options.get("quiet"))
    out = Path(out)
    check_output_dir(out, force, inputs)  # fail before pruning, not after
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    # named like atomic_output_dir's temp dirs, so a later run removes it if this one is killed
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.pruned-{os.getpid()}-", dir=out.absolute().parent) as tmp:
        staged = Path(tmp) / out.name  # the trimmed manifest names its source after `out`
        pruned = compress(model, staged, **compress_options)
        trimmed = trim_vocab(
            staged, out, trim.corpus, min_count=trim.min_count, max_size=trim.max_size, heldout=trim.heldout,
            force=force, quiet=quiet,
        )  # fmt: skip
    _forget_scratch_parent(out)
    return pruned, trimmed


def _forget_scratch_parent(out: Path) -> None:
    """The trimmed manifest's `parent` named the removed scratch directory: record it as not kept."""
    from edgebert.modeldir import read_manifest, write_manifest

    manifest = read_manifest(out)
    manifest["parent"] = None
    write_manifest(out, manifest)
