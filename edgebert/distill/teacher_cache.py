"""The teacher's outputs for a training corpus, computed once, kept on disk and fed to the trainer.

A cosine-only distillation (unmasked text: no masked-LM or soft-target loss) asks the frozen teacher the same
question for every sequence at every epoch, run and stage; on a CPU that forward pass is about half of a step.
This cache answers it from disk instead.

What is stored, per sequence (`directory/KEY/`):
- `pooled.npy` [N, H] float32: the mean-pooled embedding of the teacher layer the pooled and similarity losses
  read; small (N × H × 4 B) and kept exact, so those losses match a live teacher to float rounding;
- `layer-<i>.npy` [total tokens, H] float16: the token states of each teacher layer the token cosine loss reads
  (only when that loss is on). Token states are what a cosine over tokens needs (a CLS or mean summary cannot
  reproduce it), and they are the bulk: fp16 halves them (cosine is insensitive to fp16's 3 significant digits;
  the loss moves by ~1e-4), 384 × 2 B = 768 B per token per layer;
- `offsets.npy` [N + 1] int64: where each sequence's tokens start; `meta.json`: the key's parts, written last.

The key hashes the teacher's weights fingerprint, the token ids of every training sequence (which covers the corpus,
the tokenizer, seq_len, packing and max_passages exactly) and the layers, so a changed corpus or teacher gets a new
entry and an old one is never read for it; a run that needs fewer layers than an entry of the same teacher and text
holds reads that entry (its `meta.json` names both fingerprints and the layers). An entry is written to a temporary directory and renamed when complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from edgebert.distill.losses import mean_pool
from edgebert.distill.processes import Processes
from edgebert.errors import UserError
from edgebert.families import Family

FORMAT = 1
TOKEN_DTYPE = np.float16
INDEX_KEY = "sequence_index"  # the batch key naming each row's sequence
BUILD_BATCH = 32


@dataclass
class TeacherTargets:
    """What the hidden-state losses compare the student with, for one batch."""

    hidden: dict[int, torch.Tensor]  # teacher hidden_states index → [B, T, H] float32
    pooled: torch.Tensor | None  # [B, H] float32: mean-pooled `pooled_layer`


def needed_layers(weights: Any, cos_pairs: Sequence[tuple[int, int]]) -> tuple[list[int], int | None]:
    """(teacher layers whose token states the cosine loss reads, the layer the pooled and similarity losses pool)
    for `weights` (LossWeights) and the model's (student, teacher) hidden-state pairs."""
    token_layers = sorted({t for _, t in cos_pairs}) if weights.alpha_cos else []
    pooled_layer = cos_pairs[-1][1] if (weights.alpha_pooled or weights.alpha_sim) else None
    return token_layers, pooled_layer


def live_targets(teacher: Any, family: Family, inputs: dict[str, torch.Tensor], token_layers: Sequence[int], pooled_layer: int | None) -> TeacherTargets:
    """The teacher's targets from a forward pass (what the cache stores, and what runs without it use)."""
    base = getattr(teacher, family.mlm_base_attr)
    mask = inputs["attention_mask"]
    with torch.no_grad():
        out = base(**family.encoder_inputs(inputs["input_ids"], mask, inputs.get("token_type_ids")), output_hidden_states=True)
    pooled = mean_pool(out.hidden_states[pooled_layer].float(), mask) if pooled_layer is not None else None
    return TeacherTargets({i: out.hidden_states[i] for i in token_layers}, pooled)


def sequences_fingerprint(sequences: Sequence[Sequence[int]]) -> str:
    """Content hash of the token-id sequences (their lengths and ids, in order)."""
    h = hashlib.sha256()
    h.update(np.asarray([len(s) for s in sequences], dtype=np.int64).tobytes())
    for s in sequences:
        h.update(np.asarray(s, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def cache_key(teacher_fp: str, text_fp: str, token_layers: Sequence[int], pooled_layer: int | None) -> str:
    parts = json.dumps([FORMAT, teacher_fp, text_fp, list(token_layers), pooled_layer])
    return hashlib.sha256(parts.encode()).hexdigest()[:20]


class TeacherCache:
    """A complete cache entry, memory-mapped; `targets` gives a batch's TeacherTargets padded to its length.

    `token_layers` / `pooled_layer` (default: all the entry holds) read a part of an entry built for more layers."""

    def __init__(self, directory: Path, token_layers: Sequence[int] | None = None, pooled_layer: int | None = -1) -> None:
        self.directory = directory
        self.meta = json.loads((directory / "meta.json").read_text())
        self.offsets = np.load(directory / "offsets.npy", allow_pickle=False)
        self.token_layers = list(self.meta["token_layers"] if token_layers is None else token_layers)
        self.pooled_layer = self.meta["pooled_layer"] if pooled_layer == -1 else pooled_layer
        self.layers = {i: np.load(directory / f"layer-{i}.npy", mmap_mode="r", allow_pickle=False) for i in self.token_layers}
        self.pooled = np.load(directory / "pooled.npy", mmap_mode="r", allow_pickle=False) if self.pooled_layer is not None else None

    def targets(self, indices: torch.Tensor, length: int, device: torch.device) -> TeacherTargets:
        rows = [int(i) for i in indices]
        hidden = {}
        for layer, table in self.layers.items():
            batch = np.zeros((len(rows), length, table.shape[1]), dtype=np.float32)
            for b, i in enumerate(rows):
                start, end = self.offsets[i], self.offsets[i + 1]
                batch[b, : end - start] = table[start:end]
            hidden[layer] = torch.from_numpy(batch).to(device)
        pooled = torch.from_numpy(np.asarray(self.pooled[rows], dtype=np.float32)).to(device) if self.pooled is not None else None
        return TeacherTargets(hidden, pooled)


def open_or_build(
    root: str | Path, teacher: Any, family: Family, dataset: Any, collator: Callable[[list[dict[str, Any]]], dict[str, Any]],
    teacher_fp: str, token_layers: Sequence[int], pooled_layer: int | None, log: Callable[[str], None] = print,
    quiet: bool = True, procs: Processes | None = None,
) -> tuple[TeacherCache, dict[str, Any]]:
    """The cache entry for (teacher, training sequences, layers) under `root`, built first when missing.
    Returns it and a record for the manifest (directory, key, hit, build time, bytes); a build shows its progress
    unless `quiet`. Under several processes (`procs`) each computes its share of a build, and all of them must call
    this together; `root` must then be on storage every process sees."""
    procs = procs or Processes()
    text_fp = sequences_fingerprint(dataset.sequences)
    key_parts = {"teacher_fingerprint": teacher_fp, "text_fingerprint": text_fp}
    root = Path(root).expanduser().absolute()
    procs.wait()  # no process looks for the entry while another one is completing it
    directory = root / cache_key(teacher_fp, text_fp, token_layers, pooled_layer)
    if not (directory / "meta.json").is_file():
        directory = _covering_entry(root, key_parts, token_layers, pooled_layer) or directory
    hit = (directory / "meta.json").is_file()
    key = directory.name
    started = time.perf_counter()
    if hit:
        log(f"teacher outputs: reusing the cache in {directory}")
    else:
        shares = f" in {procs.count} shares, one per process" if procs.count > 1 else ""
        log(f"teacher outputs: computing them once for {len(dataset)} sequences{shares} into {directory}")
        _build(directory, teacher, family, dataset, collator, token_layers, pooled_layer, key_parts, quiet, procs)
    cache = TeacherCache(directory, token_layers, pooled_layer)
    if cache.meta["sequences"] != len(dataset) or cache.offsets[-1] != dataset.num_tokens:
        raise UserError(f"the teacher-output cache {directory} does not match this corpus (a damaged entry); delete it and rerun")
    size = sum(f.stat().st_size for f in directory.iterdir())
    record = {"dir": str(directory), "key": key, "hit": hit, "seconds": round(time.perf_counter() - started, 2), "bytes": size, "built_by_processes": None if hit else procs.count,
              "token_layers": list(token_layers), "pooled_layer": pooled_layer, "token_dtype": np.dtype(TOKEN_DTYPE).name}  # fmt: skip
    return cache, record


def _covering_entry(root: Path, key_parts: dict[str, str], token_layers: Sequence[int], pooled_layer: int | None) -> Path | None:
    """A complete entry under `root` for the same teacher and text that holds every layer asked for (built for a
    recipe with more losses: a pooled-only run reads the pooled table of a cosine run's entry), or None."""
    for meta_file in sorted(root.glob("*/meta.json")):
        try:
            meta = json.loads(meta_file.read_text())
        except (OSError, ValueError):
            continue
        same = meta.get("format") == FORMAT and all(meta.get(k) == v for k, v in key_parts.items())
        pooled_ok = pooled_layer is None or meta.get("pooled_layer") == pooled_layer
        if same and pooled_ok and set(token_layers) <= set(meta.get("token_layers", [])):
            return meta_file.parent
    return None


def _build(
    directory: Path, teacher: Any, family: Family, dataset: Any, collator: Callable[[list[dict[str, Any]]], dict[str, Any]],
    token_layers: Sequence[int], pooled_layer: int | None, key_parts: dict[str, str], quiet: bool, procs: Processes,
) -> None:
    """Run the teacher over `dataset` (length-sorted batches; each process its share of the rows) and write a
    complete entry to `directory`: the main process lays out the files in a building directory beside it, every
    process fills its rows, and the main one completes the entry with meta.json and renames it into place."""
    lengths = np.asarray([len(s) for s in dataset.sequences], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    hidden = int(teacher.config.hidden_size)
    building = directory.parent / f".{directory.name}.building"
    shapes = {f"layer-{i}.npy": ((int(offsets[-1]), hidden), TOKEN_DTYPE) for i in token_layers}
    if pooled_layer is not None:
        shapes["pooled.npy"] = ((len(dataset), hidden), np.float32)
    if procs.main:
        _lay_out(building, offsets, shapes)
    procs.wait()
    try:
        tables = {name: np.load(building / name, mmap_mode="r+", allow_pickle=False) for name in shapes}
        rows = procs.share([int(i) for i in np.argsort(lengths, kind="stable")])
        _fill(tables, rows, offsets, lengths, teacher, family, dataset, collator, token_layers, pooled_layer, quiet)
        del tables
        procs.wait()
        if procs.main:
            meta = {"format": FORMAT, **key_parts, "sequences": len(dataset), "tokens": int(offsets[-1]), "hidden": hidden,
                    "token_layers": list(token_layers), "pooled_layer": pooled_layer}  # fmt: skip
            (building / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
            if directory.exists():  # an incomplete entry (no meta.json) left by a killed run
                shutil.rmtree(directory)
            os.replace(building, directory)
        procs.wait()  # the entry is in place before any process opens it
    finally:
        if procs.main:  # after a failure: nothing half written stays (a success has renamed it already)
            shutil.rmtree(building, ignore_errors=True)


def _lay_out(building: Path, offsets: np.ndarray, shapes: dict[str, tuple[tuple[int, int], Any]]) -> None:
    """A fresh building directory holding the offsets and a zero-filled table per file of `shapes`."""
    shutil.rmtree(building, ignore_errors=True)  # left by a killed run
    building.mkdir(parents=True)
    np.save(building / "offsets.npy", offsets)
    for name, (shape, dtype) in shapes.items():
        np.lib.format.open_memmap(building / name, mode="w+", dtype=dtype, shape=shape).flush()


def _fill(
    tables: dict[str, np.ndarray], rows: list[int], offsets: np.ndarray, lengths: np.ndarray, teacher: Any, family: Family,
    dataset: Any, collator: Callable[[list[dict[str, Any]]], dict[str, Any]], token_layers: Sequence[int],
    pooled_layer: int | None, quiet: bool,
) -> None:
    """Write the teacher's targets for `rows` into the memory-mapped `tables`, BUILD_BATCH sequences at a time."""
    from edgebert.progress import Track

    teacher.eval()
    with Track("teacher outputs", len(rows), "sequences", quiet=quiet) as track:
        for start in range(0, len(rows), BUILD_BATCH):
            batch_rows = rows[start : start + BUILD_BATCH]
            batch = collator([{k: v for k, v in dataset[i].items() if k != INDEX_KEY} for i in batch_rows])
            t = live_targets(teacher, family, batch, token_layers, pooled_layer)
            for layer in token_layers:
                states, table = t.hidden[layer].float().cpu().numpy(), tables[f"layer-{layer}.npy"]
                for b, i in enumerate(batch_rows):
                    table[offsets[i] : offsets[i + 1]] = states[b, : lengths[i]]
            if pooled_layer is not None:
                tables["pooled.npy"][batch_rows] = t.pooled.cpu().numpy()
            track.advance(len(batch_rows))
    for table in tables.values():
        table.flush()


class IndexedCorpus:
    """A tokenised corpus whose items also carry their index (INDEX_KEY), so a batch can find its cached targets."""

    def __init__(self, corpus: Any) -> None:
        self.corpus = corpus
        self.sequences = corpus.sequences

    def __len__(self) -> int:
        return len(self.corpus)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {**self.corpus[index], INDEX_KEY: index}

    @property
    def num_tokens(self) -> int:
        return self.corpus.num_tokens


class IndexedCollator:
    """Pads with `collator` and passes the items' INDEX_KEY through as a [B] tensor."""

    def __init__(self, collator: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> None:
        self.collator = collator

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        indices = torch.tensor([item[INDEX_KEY] for item in items], dtype=torch.long)
        batch = self.collator([{k: v for k, v in item.items() if k != INDEX_KEY} for item in items])
        batch[INDEX_KEY] = indices
        return batch
