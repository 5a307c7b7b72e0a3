"""The teacher as a masked-LM: its own MLM head, or a head tied to its word embeddings fitted on the corpus.

A sentence-transformers teacher (e.g. all-MiniLM-L6-v2) is a plain encoder with no vocabulary logits, so it
cannot give soft targets. We give it the family's MLM head (transform + LayerNorm + decoder tied to the word
embeddings + bias), freeze the body, and fit the head's transform and bias on the corpus. The fitted head is
cached under a key of (teacher weights, corpus, recipe) so later runs reuse it; its masked-LM accuracy on
held-out passages is recorded in the student's manifest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from edgebert.config import DistillConfig
from edgebert.options import default
from edgebert.errors import UserError
from edgebert.families import Family
from edgebert.modelio import has_mlm_head, load_weights

HEAD_FILE = "mlm_head.safetensors"
HEAD_META = "mlm_head.json"
CACHE_VERSION = 1


@dataclass
class HeadFitConfig:
    """How a head-less teacher's MLM head is fitted (distill's head_steps / head_batch_size / head_lr)."""

    steps: int = default(DistillConfig, "head_steps")
    batch_size: int = default(DistillConfig, "head_batch_size")
    lr: float = default(DistillConfig, "head_lr")
    seed: int = 0
    eval_sequences: int = 256


def default_cache_dir() -> Path:
    """`$EDGEBERT_CACHE/mlm-heads`, else `$XDG_CACHE_HOME/edgebert/mlm-heads`, else `~/.cache/edgebert/mlm-heads`.

    Always absolute: an empty or relative XDG_CACHE_HOME is ignored (as the XDG spec says), and a relative
    EDGEBERT_CACHE is taken from the working directory once, here, so no cache lands in (or shadows) a package dir
    by accident."""
    explicit = os.environ.get("EDGEBERT_CACHE", "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute() / "mlm-heads"
    xdg = Path(os.environ.get("XDG_CACHE_HOME", "").strip()).expanduser()
    base = xdg if xdg.is_absolute() else Path("~/.cache").expanduser()
    return base.absolute() / "edgebert" / "mlm-heads"


def weights_fingerprint(model_dir: Path) -> str:
    """Content hash of a model directory's weight files (config included)."""
    h = hashlib.sha256()
    for name in ("config.json", "model.safetensors", "pytorch_model.bin"):
        path = Path(model_dir) / name
        if path.exists():
            h.update(name.encode())
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


def load_teacher_mlm(model_dir: Path, family: Family) -> tuple[Any, bool]:
    """The teacher as the family's masked-LM class (eval mode, frozen) and whether the head is its own."""
    import transformers

    if family.mlm_class is None:
        raise UserError(f"{family.name} teachers cannot be distilled yet (no masked-LM class known)")
    cls = getattr(transformers, family.mlm_class)
    own_head = has_mlm_head(model_dir, family)
    model, info = load_weights(cls, model_dir)  # a missing head is expected: it is fitted next
    missing = [k for k in info.get("missing_keys", []) if not family.is_mlm_head_key(k)]
    if missing:
        raise UserError(f"the teacher in {model_dir} is missing {len(missing)} tensors (e.g. {missing[0]}); re-save it")
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, own_head


def head_parameters(model: Any, family: Family) -> dict[str, torch.nn.Parameter]:
    """The head parameters fitted with the body frozen (not the tied decoder weight)."""
    return {n: p for n, p in model.named_parameters() if n.startswith(family.mlm_head_fit_prefixes)}


def masked_logits(model: Any, family: Family, batch: dict[str, torch.Tensor], grad_head: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Vocabulary logits at masked positions only (the head over 30k words is the costly part): (logits, labels)."""
    base = getattr(model, family.mlm_base_attr)
    head = family.mlm_head(model)
    labels = batch["labels"]
    with torch.no_grad():
        hidden = base(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    selected = labels != -100
    with torch.set_grad_enabled(grad_head):
        logits = head(hidden[selected])
    return logits, labels[selected]


@contextlib.contextmanager
def _seeded(collator: Any, seed: int) -> Iterator[None]:
    """Masks from a fresh generator seeded with `seed`; the collator's own generator is restored afterwards."""
    previous = getattr(collator, "generator", None)
    collator.generator = torch.Generator().manual_seed(seed)
    try:
        yield
    finally:
        collator.generator = previous


def mlm_accuracy(model: Any, family: Family, sequences: Any, collator: Any, batch_size: int = 32, seed: int = 1234) -> dict[str, float]:
    """Masked-token accuracy and loss on `sequences` with fixed masks (seeded, global RNG left untouched)."""
    correct, total, loss_sum = 0, 0, 0.0
    with torch.random.fork_rng(devices=[]), _seeded(collator, seed):
        torch.manual_seed(seed)
        for start in range(0, len(sequences), batch_size):
            batch = collator([sequences[i] for i in range(start, min(start + batch_size, len(sequences)))])
            logits, labels = masked_logits(model, family, batch)
            if labels.numel() == 0:
                continue
            loss_sum += float(torch.nn.functional.cross_entropy(logits.float(), labels, reduction="sum"))
            correct += int((logits.argmax(-1) == labels).sum())
            total += int(labels.numel())
    return {"accuracy": correct / max(total, 1), "loss": loss_sum / max(total, 1), "masked_tokens": total}


def fit_mlm_head(model: Any, family: Family, train: Any, heldout: Any, collator: Any, cfg: HeadFitConfig, log: Any = None) -> dict[str, Any]:
    """Fit the head's transform and bias (body and tied decoder frozen) with AdamW; return before/after metrics."""
    params = head_parameters(model, family)
    if not params:
        raise UserError(f"no MLM head parameters found with prefixes {family.mlm_head_fit_prefixes}")
    before = mlm_accuracy(model, family, heldout, collator)
    for p in params.values():
        p.requires_grad_(True)
    optimizer = torch.optim.AdamW(params.values(), lr=cfg.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 20) * max(0.0, 1 - s / cfg.steps))
    generator = torch.Generator().manual_seed(cfg.seed)
    started = time.perf_counter()
    losses = []
    with torch.random.fork_rng(devices=[]), _seeded(collator, cfg.seed + 1):
        torch.manual_seed(cfg.seed)
        model.train(False)
        for step in range(cfg.steps):
            idx = torch.randint(len(train), (cfg.batch_size,), generator=generator).tolist()
            batch = collator([train[i] for i in idx])
            logits, labels = masked_logits(model, family, batch, grad_head=True)
            loss = torch.nn.functional.cross_entropy(logits.float(), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            if log and (step + 1) % max(1, cfg.steps // 10) == 0:
                log(f"teacher MLM head: step {step + 1}/{cfg.steps} loss {sum(losses[-20:]) / len(losses[-20:]):.3f}")
    for p in params.values():
        p.requires_grad_(False)
    after = mlm_accuracy(model, family, heldout, collator)
    return {
        "before": before,
        "after": after,
        "mlm_accuracy": after["accuracy"],
        "train_loss_first": losses[0] if losses else None,
        "train_loss_last": sum(losses[-20:]) / max(1, len(losses[-20:])),
        "fit_seconds": round(time.perf_counter() - started, 2),
        "config": asdict(cfg),
    }


def head_cache_key(teacher_fp: str, corpus_fp: str, seq_len: int, packing: str, cfg: HeadFitConfig) -> str:
    blob = json.dumps([CACHE_VERSION, teacher_fp, corpus_fp, seq_len, packing, asdict(cfg)], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def load_cached_head(model: Any, family: Family, directory: Path) -> dict[str, Any] | None:
    weights, meta = directory / HEAD_FILE, directory / HEAD_META
    if not (weights.exists() and meta.exists()):
        return None
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(weights))
        info = json.loads(meta.read_text())
    except Exception:  # noqa: BLE001 - a broken cache entry is refitted, not fatal
        return None
    params = head_parameters(model, family)
    if set(tensors) != set(params) or any(tensors[k].shape != params[k].shape for k in params):
        return None
    with torch.no_grad():
        for k, p in params.items():
            p.copy_(tensors[k])
    return info


def save_cached_head(model: Any, family: Family, directory: Path, info: dict[str, Any]) -> None:
    """Write the fitted head into `directory` atomically (temp dir + rename)."""
    from safetensors.torch import save_file

    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        save_file({k: p.detach().cpu().contiguous() for k, p in head_parameters(model, family).items()}, str(tmp / HEAD_FILE))
        (tmp / HEAD_META).write_text(json.dumps(info, indent=2, default=str) + "\n")
        if directory.exists():
            shutil.rmtree(directory, ignore_errors=True)
        os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def prepare_teacher(
    model_dir: Path,
    family: Family,
    corpus: Any,
    collator: Any,
    corpus_fp: str,
    seq_len: int,
    packing: str,
    cfg: HeadFitConfig,
    cache_dir: Path | None = None,
    log: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """The teacher masked-LM ready for soft targets, and a record of where its head came from."""
    model, own_head = load_teacher_mlm(model_dir, family)
    n_eval = min(cfg.eval_sequences, max(1, len(corpus) // 20))
    heldout = [corpus[i] for i in range(len(corpus) - n_eval, len(corpus))]
    if own_head:
        metrics = mlm_accuracy(model, family, heldout, collator)
        return model, {"source": "own", "mlm_accuracy": metrics["accuracy"], "heldout": metrics}
    teacher_fp = weights_fingerprint(model_dir)
    key = head_cache_key(teacher_fp, corpus_fp, seq_len, packing, cfg)
    directory = (Path(cache_dir).expanduser().absolute() if cache_dir else default_cache_dir()) / key
    cached = load_cached_head(model, family, directory)
    if cached is not None:
        if log:
            log(f"teacher MLM head: reusing the fitted head in {directory}")
        return model, {**cached, "source": "fitted", "cache": str(directory), "cache_hit": True}
    if log:
        log(f"teacher MLM head: {model_dir.name} has none; fitting one tied to its word embeddings ({cfg.steps} steps)")
    train = _SubsetView(corpus, len(corpus) - n_eval)
    info = fit_mlm_head(model, family, train, heldout, collator, cfg, log=log)
    info.update({"teacher_fingerprint": teacher_fp, "corpus_fingerprint": corpus_fp, "seq_len": seq_len, "packing": packing})
    try:
        save_cached_head(model, family, directory, info)
    except OSError as exc:  # a read-only cache only costs the refit next time
        if log:
            log(f"teacher MLM head: could not cache it in {directory} ({exc})")
    return model, {**info, "source": "fitted", "cache": str(directory), "cache_hit": False}


class _SubsetView:
    def __init__(self, data: Any, length: int) -> None:
        self.data, self.length = data, max(1, length)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> Any:
        return self.data[i]
