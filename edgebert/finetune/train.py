"""Training with sentence-transformers' trainer, once per seed from the same start, each epoch's weights saved
(`soup.Snapshots`); then the choice of the candidate kept."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from edgebert.config import FinetuneConfig
from edgebert.finetune import losses, metrics
from edgebert.finetune.data import Rows
from edgebert.finetune.soup import START, Candidate, Snapshots, State, candidates, soup_of


def train_run(
    model: Any, rows: Rows, loss: str, o: FinetuneConfig, seed: int, run: int, snapshots: Snapshots, work: Path,
    log: Callable[[str], None] | None,
) -> dict[str, Any]:  # fmt: skip
    """Train `model` (at the start's weights) for `o.epochs` with `seed`, saving it after every epoch as run `run`; the
    trainer's figures. `log`: progress lines (None: quiet)."""
    from datasets import Dataset

    data = Dataset.from_dict(losses.training_columns(loss, rows))
    trainer = _trainer(model, data, loss, o, seed, work)
    trainer.add_callback(_snapshot_every_epoch(model, snapshots, run))
    if log is not None:
        from edgebert.distill.trainer import StepLines

        trainer.add_callback(StepLines(log, len(trainer.get_train_dataloader()) * o.epochs))
    result = trainer.train()
    losses_seen = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return {"seed": seed, "steps": result.global_step, "train_loss": round(float(result.training_loss), 6),
            "train_runtime_s": round(float(result.metrics.get("train_runtime", 0.0)), 2),
            "first_loss": losses_seen[0] if losses_seen else None, "last_loss": losses_seen[-1] if losses_seen else None}  # fmt: skip


@contextlib.contextmanager
def training_length(model: Any, seq_len: int | None) -> Iterator[None]:
    """`model` truncating at `seq_len` tokens inside the block (None: at its own length), at its own length after:
    sentence-transformers keeps the length in the tokenizer, which is saved with the model."""
    own = model.max_seq_length
    if seq_len:
        model.max_seq_length = seq_len
    try:
        yield
    finally:
        if seq_len:
            model.max_seq_length = own


def _trainer(model: Any, data: Any, loss: str, o: FinetuneConfig, seed: int, work: Path) -> Any:
    """sentence-transformers' trainer without its own model card (edgebert writes the directory's) and without
    printing (progress is edgebert's)."""
    import torch
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from transformers import PrinterCallback

    class Trainer(SentenceTransformerTrainer):
        def add_model_card_callback(self, default_args_dict: dict[str, Any]) -> None:
            pass  # its model card samples the data with the global random state; edgebert writes README.md itself

    args = SentenceTransformerTrainingArguments(
        output_dir=str(work), num_train_epochs=o.epochs, per_device_train_batch_size=o.batch_size, learning_rate=o.lr,
        warmup_steps=o.warmup_ratio, lr_scheduler_type="linear", weight_decay=o.weight_decay, seed=seed,
        batch_sampler=losses.batch_sampler(loss), save_strategy="no", report_to="none", disable_tqdm=True,
        logging_steps=10, use_cpu=not torch.cuda.is_available(),
    )  # fmt: skip
    trainer = Trainer(model=model, args=args, train_dataset=data, loss=losses.build_loss(loss, model))
    trainer.remove_callback(PrinterCallback)
    return trainer


def _snapshot_every_epoch(model: Any, snapshots: Snapshots, run: int) -> Any:
    """A TrainerCallback saving `model`'s weights as run `run`'s at the end of each epoch (1, 2, ...)."""
    from transformers import TrainerCallback

    class Snapshot(TrainerCallback):
        epoch = 0

        def on_epoch_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.epoch += 1
            snapshots.save(run, self.epoch, model.state_dict())

    return Snapshot()


def choose(model: Any, held: Rows, snapshots: Snapshots, runs: int, epochs: int, start: float | None) -> tuple[Candidate, State, dict[Candidate, float | None]]:
    """The candidate scoring best on `held` (the start, `start` its score, wins only when nothing beats it), its
    weights, and every candidate's score. `model` is left holding the last candidate scored."""
    scores: dict[Candidate, float | None] = {START: start}
    best, best_state = START, snapshots.load(0, 0)
    for candidate, state in candidates(snapshots, runs, epochs):
        model.load_state_dict(state)
        scores[candidate] = metrics.score(model, held)
        if _above(scores[candidate], scores[best]):
            best, best_state = candidate, state
    return best, best_state, scores


def _above(score: float | None, than: float | None) -> bool:
    return score is not None and (than is None or score > than)


def last_epochs(snapshots: Snapshots, runs: int, epochs: int, soup_from: int | None) -> tuple[Candidate, State]:
    """Without held-out rows: the last epoch, or the soup of epochs `soup_from`..last, averaged over the runs."""
    return soup_of(snapshots, runs, epochs, soup_from or epochs)
