"""Which sentence-transformers loss a finetune uses, whether it fits the file's columns, and the columns it reads.

- `cosent` (CoSENTLoss) and `angle` (AnglELoss, CoSENT on angle differences) learn from scored pairs. Both compare
  every two pairs of a batch and push the higher-scored one to the higher similarity: only the order of the scores
  matters, so any numeric scale works (STS-B's 0-5, 0-1, votes) and no score range is asked for.
- `mnrl` (MultipleNegativesRankingLoss) learns from unscored (anchor, positive) pairs, or (anchor, positive,
  negative) triplets: each anchor must pick its own positive among the batch's positives (and negatives), so batches
  are drawn without duplicate texts (a repeated positive would be a false negative).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from edgebert.errors import UserError
from edgebert.finetune.data import DEFAULT_SCORE_COLUMN, Columns, Rows

SCORED = ("cosent", "angle")


def score_columns(loss: str, given: str | None, columns: Columns) -> Columns:
    """`columns` with the score column to read for `loss` and --score-column `given`: none for mnrl; the one given, or
    `score`, which cosent and angle need and auto reads when the file has it."""
    if loss == "mnrl":
        if given is not None:
            raise UserError(f"--loss mnrl treats every pair as a positive and reads no scores; drop --score-column {given}, or use --loss cosent")
        return replace(columns, score=None, score_required=False)
    needs = loss if loss in SCORED else None
    return replace(columns, score=given or DEFAULT_SCORE_COLUMN, score_required=bool(needs or given), score_for=needs)


def chosen_loss(loss: str, rows: Rows) -> str:
    """The loss for `rows` (`auto`: cosent with scores, mnrl without); UserError when it does not fit their columns."""
    if loss == "auto":
        loss = "cosent" if rows.scores is not None else "mnrl"
    if loss in SCORED and rows.negatives is not None:
        raise UserError(f"--negative-column is for --loss mnrl (in-batch negatives); {loss} learns from the scores of {rows.where}: drop it")
    return loss


def training_columns(loss: str, rows: Rows) -> dict[str, list[Any]]:
    """The training dataset's columns, in the order sentence-transformers feeds them to the loss (the label last)."""
    if loss in SCORED:
        return {"sentence1": rows.sentence1, "sentence2": rows.sentence2, "score": rows.scores}
    columns: dict[str, list[Any]] = {"anchor": rows.sentence1, "positive": rows.sentence2}
    if rows.negatives is not None:
        columns["negative"] = rows.negatives
    return columns


def build_loss(loss: str, model: Any) -> Any:
    """sentence-transformers' loss module `loss` on `model`."""
    from sentence_transformers.sentence_transformer import losses

    classes = {"cosent": losses.CoSENTLoss, "angle": losses.AnglELoss, "mnrl": losses.MultipleNegativesRankingLoss}
    return classes[loss](model)


def batch_sampler(loss: str) -> str:
    """sentence-transformers' batch sampler for `loss`: no repeated text in an mnrl batch."""
    return "no_duplicates" if loss == "mnrl" else "batch_sampler"
