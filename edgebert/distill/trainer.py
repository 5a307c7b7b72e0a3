"""The distillation loop: transformers.Trainer with a distillation `compute_loss`.

Trainer brings checkpoints (`save_steps`), `resume_from_checkpoint`, gradient accumulation, warmup + decay,
mixed precision on GPUs and DDP under `torchrun` / `accelerate launch`. What is ours:

- `DistillationModel`: the trainable part (student masked-LM + optional student→teacher projections). Its
  forward returns the student's logits at the scored positions and the hidden states the losses compare.
- `DistillationTrainer.compute_loss`: runs the frozen teacher (kept outside the trained module, so it is
  neither optimised nor checkpointed) and combines the loss terms; each term is averaged between log steps.
- `evaluate`: STS Spearman of the student's pooled embeddings, so `metric_for_best_model` keeps the best.
- `_save`: checkpoints as safetensors with tied tensors written once (Trainer's default refuses shared tensors
  for a module that is not a PreTrainedModel).
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn
from transformers import Trainer, TrainerCallback

from edgebert.distill.losses import (
    IGNORE_INDEX,
    LossWeights,
    combine,
    cosine_loss,
    mean_pool,
    mlm_loss,
    pooled_cosine,
    pooled_cosine_loss,
    similarity_loss,
    soft_target_loss,
)
from edgebert.distill.tied import tied_duplicate_keys
from edgebert.families import Family

SAFE_WEIGHTS_NAME = "model.safetensors"


class DistillationModel(nn.Module):
    """Student masked-LM plus learned width projections; forward gives what the losses need."""

    def __init__(
        self,
        student: nn.Module,
        family: Family,
        cos_pairs: list[tuple[int, int]],
        projections: nn.ModuleList | None = None,
        score_positions: str = "masked",
    ) -> None:
        super().__init__()
        self.student = student
        self.projections = projections
        self.cos_pairs = list(cos_pairs)  # (student hidden_states index, teacher hidden_states index)
        self.base_attr = family.mlm_base_attr
        self.family = family
        self.score_positions = score_positions
        # Tied tensors (decoder = word embeddings) are checkpointed once; Trainer re-ties them after loading.
        self._keys_to_ignore_on_save: list[str] | None = tied_duplicate_keys(self.state_dict()) or None

    def tie_weights(self) -> None:
        tie_student(self.student)

    def scored(self, labels: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Positions whose vocabulary logits are computed: the masked ones, or every real token."""
        return labels != IGNORE_INDEX if self.score_positions == "masked" else attention_mask.bool()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        labels: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        need_logits: bool = True,
    ) -> dict[str, Any]:
        base = getattr(self.student, self.base_attr)
        out = base(**self.family.encoder_inputs(input_ids, attention_mask, token_type_ids), output_hidden_states=bool(self.cos_pairs))
        result: dict[str, Any] = {"last_hidden_state": out.last_hidden_state}
        if need_logits:
            head = self.family.mlm_head(self.student)
            result["logits"] = head(out.last_hidden_state[self.scored(labels, attention_mask)])
        hidden = []
        for i, (s_idx, _) in enumerate(self.cos_pairs):
            h = out.hidden_states[s_idx]
            hidden.append(self.projections[i](h) if self.projections is not None else h)
        result["hidden"] = hidden
        return result


def tie_student(student: nn.Module) -> None:
    """transformers' tie_weights, except on a weight grid (edgebert/weight_grids.py): there the word table's Parameter
    lives under `parametrizations.weight.original`, where transformers cannot find it by name (it raises), and the
    decoder still holds that same Parameter, so the two stay tied."""
    from torch.nn.utils import parametrize

    if not any(parametrize.is_parametrized(m) for m in student.modules()):
        student.tie_weights()


class DistillationTrainer(Trainer):
    """Trainer whose loss is the weighted sum of the distillation terms against a frozen teacher."""

    def __init__(
        self,
        *args: Any,
        teacher: nn.Module,
        family: Family,
        weights: LossWeights,
        student_family: Family | None = None,
        sts: Any = None,
        sts_tokenizer: Any = None,
        pooling: str = "mean",
        masker: Any = None,
        mask_seed: int = 0,
        teacher_cache: Any = None,
        labelled: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.teacher_cache = teacher_cache  # edgebert.distill.teacher_cache.TeacherCache: targets from disk, no teacher pass
        self.labelled = labelled  # task distillation: edgebert.distill.task.LabelledEval, or None
        self.masker = masker
        self.mask_seed = mask_seed
        self._mask_step, self._mask_micro = -1, 0
        self.teacher = teacher.eval()
        self.family = family  # the teacher's
        self.student_family = student_family or family  # ALBERT for factorised-embedding students
        self.weights = weights
        self.sts = sts
        self.sts_tokenizer = sts_tokenizer
        self.pooling = pooling
        self._term_sums: dict[str, float] = {}
        self._term_count = 0
        self.term_history: list[dict[str, float]] = []

    # ------------------------------------------------------------------ loss
    def _teacher_logits(self, inputs: dict[str, torch.Tensor], scored: torch.Tensor) -> torch.Tensor:
        """The teacher's vocabulary logits at the scored positions (soft targets)."""
        device = inputs["input_ids"].device
        if next(self.teacher.parameters()).device != device:
            self.teacher.to(device)
        base = getattr(self.teacher, self.family.mlm_base_attr)
        head = self.family.mlm_head(self.teacher)
        with torch.no_grad():
            out = base(**self.family.encoder_inputs(inputs["input_ids"], inputs["attention_mask"], inputs.get("token_type_ids")))
            return head(out.last_hidden_state[scored])

    def _teacher_targets(self, core: nn.Module, inputs: dict[str, torch.Tensor]) -> Any:
        """The teacher's hidden states and pooled embedding the hidden-state losses read: from the cache when
        there is one, else from a forward pass."""
        from edgebert.distill.teacher_cache import INDEX_KEY, live_targets, needed_layers

        device = inputs["input_ids"].device
        if self.teacher_cache is not None:
            return self.teacher_cache.targets(inputs[INDEX_KEY], inputs["input_ids"].size(1), device)
        if next(self.teacher.parameters()).device != device:
            self.teacher.to(device)
        return live_targets(self.teacher, self.family, inputs, *needed_layers(self.weights, core.cos_pairs))

    def mask(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Dynamic masking (DataCollatorForLanguageModeling's 80/10/10) keyed on (seed, rank, step, micro-batch).

        Masking here rather than in the data loader makes a resumed run draw exactly the masks of an
        uninterrupted one: the loader prefetches the next batch, and Trainer restores the checkpoint's RNG only
        after that first batch was drawn.
        """
        step = self.state.global_step
        if step != self._mask_step:
            self._mask_step, self._mask_micro = step, 0
        key = ((self.mask_seed * 1_000_003 + self.args.process_index) * 1_000_003 + step) * 1_009 + self._mask_micro
        self._mask_micro += 1
        self.masker.generator = torch.Generator().manual_seed(key % (2**63 - 1))
        inputs = dict(inputs)
        special = inputs.pop("special_tokens_mask")
        device = inputs["input_ids"].device
        ids, labels = self.masker.torch_mask_tokens(inputs["input_ids"].cpu().clone(), special_tokens_mask=special.cpu().bool())
        inputs["input_ids"], inputs["labels"] = ids.to(device), labels.to(device)
        return inputs

    def compute_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool = False, num_items_in_batch: Any = None) -> Any:
        w = self.weights
        if "labels" not in inputs:
            inputs = self.mask(inputs)
        if self.task:
            return self._task_loss(model, inputs, return_outputs)
        labels = inputs["labels"]
        core = self.accelerator.unwrap_model(model)
        scored = core.scored(labels, inputs["attention_mask"])
        t_logits = self._teacher_logits(inputs, scored) if w.alpha_ce else None
        t = self._teacher_targets(core, inputs) if (w.alpha_cos or w.alpha_pooled or w.alpha_sim) else None
        s = model(
            input_ids=inputs["input_ids"],
            attention_mask=inputs["attention_mask"],
            labels=labels,
            token_type_ids=inputs.get("token_type_ids"),
            need_logits=bool(w.alpha_mlm or w.alpha_ce),
        )
        mask = inputs["attention_mask"]
        terms: dict[str, torch.Tensor] = {}
        if w.alpha_mlm:
            terms["mlm"] = mlm_loss(s["logits"], labels[scored])
        if w.alpha_ce:
            terms["ce"] = soft_target_loss(s["logits"], t_logits, w.temperature)
        if w.alpha_cos:
            pairs = core.cos_pairs
            terms["cos"] = sum(cosine_loss(h, t.hidden[t_idx], mask) for h, (_, t_idx) in zip(s["hidden"], pairs)) / len(pairs)
        if w.alpha_pooled:
            terms["pooled"] = pooled_cosine(mean_pool(s["hidden"][-1].float(), mask), t.pooled)
        if w.alpha_sim:  # the student's own embedding (no projection): similarity matrices need no common width
            terms["sim"] = similarity_loss(mean_pool(s["last_hidden_state"].float(), mask), t.pooled)
        loss = self._combine(terms)
        return (loss, s) if return_outputs else loss

    @property
    def task(self) -> bool:
        """Task distillation: the student is a classifier (edgebert.distill.task.TaskDistillationModel)."""
        from edgebert.distill.task import TaskDistillationModel

        return isinstance(self.accelerator.unwrap_model(self.model), TaskDistillationModel)

    def _task_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool) -> Any:
        """Soft targets on the classifier's logits (KL at T × T²) plus the hidden-state cosine over mapped layers."""
        from edgebert.distill.task import teacher_forward

        w = self.weights
        core = self.accelerator.unwrap_model(model)
        need_hidden = bool(w.alpha_cos or w.alpha_pooled)
        t_out = teacher_forward(self.teacher, inputs, need_hidden)
        s = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], token_type_ids=inputs.get("token_type_ids"))
        mask = inputs["attention_mask"]
        terms: dict[str, torch.Tensor] = {}
        if w.alpha_ce:
            terms["ce"] = soft_target_loss(s["logits"], t_out.logits, w.temperature)
        if w.alpha_cos:
            pairs = core.cos_pairs
            terms["cos"] = sum(cosine_loss(h, t_out.hidden_states[t_idx], mask) for h, (_, t_idx) in zip(s["hidden"], pairs)) / len(pairs)
        if w.alpha_pooled:
            terms["pooled"] = pooled_cosine_loss(s["hidden"][-1], t_out.hidden_states[core.cos_pairs[-1][1]], mask)
        loss = self._combine(terms)
        return (loss, s) if return_outputs else loss

    def _combine(self, terms: dict[str, torch.Tensor]) -> torch.Tensor:
        """The weighted sum of `terms`, each also added to the running sums logged per term."""
        loss = combine(terms, self.weights)
        for name, value in terms.items():
            self._term_sums[name] = self._term_sums.get(name, 0.0) + float(value.detach())
        self._term_count += 1
        return loss

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if "loss" in logs and self._term_count:
            for name, total in self._term_sums.items():
                logs[f"loss_{name}"] = round(total / self._term_count, 4)
            self._term_sums, self._term_count = {}, 0
            self.term_history.append({"step": self.state.global_step, **{k: v for k, v in logs.items() if k.startswith("loss")}})
        super().log(logs, *args, **kwargs)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, eval_dataset: Any = None, ignore_keys: Any = None, metric_key_prefix: str = "eval") -> dict[str, float]:
        from edgebert.evaluate import sts_spearman

        core = self.accelerator.unwrap_model(self.model)
        if self.labelled is not None:
            scores = self.labelled.score(core.student, self.sts_tokenizer)
            metrics = {f"{metric_key_prefix}_{k}": v for k, v in scores.items()}
            self.log(metrics)
            self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
            return metrics
        if self.sts is None:
            return {}
        base = getattr(core.student, self.student_family.mlm_base_attr)
        rho = sts_spearman(
            base, self.sts_tokenizer, self.sts, pooling=self.pooling, uses_token_type_ids=self.student_family.uses_token_type_ids
        )
        metrics = {f"{metric_key_prefix}_sts_spearman": round(rho, 5)}
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics

    # ------------------------------------------------------------------ checkpoints
    def _save(self, output_dir: str | None = None, state_dict: dict[str, torch.Tensor] | None = None) -> None:
        from safetensors.torch import save_file

        output_dir = output_dir if output_dir is not None else self.args.output_dir
        os.makedirs(output_dir, exist_ok=True)
        core = self.accelerator.unwrap_model(self.model)
        state = state_dict if state_dict is not None else core.state_dict()
        dropped = set(tied_duplicate_keys(state))
        unique = {k: t.detach().cpu().contiguous() for k, t in state.items() if k not in dropped}
        save_file(unique, os.path.join(output_dir, SAFE_WEIGHTS_NAME), metadata={"format": "pt"})


class StepLines(TrainerCallback):
    """Training progress as lines, for logs that are not a terminal (where tqdm's bar would be one endless line):
    the step count at every tenth of the run with the last loss, elapsed time and an estimate, and each evaluation."""

    def __init__(self, log: Any, steps: int) -> None:
        from edgebert.progress import Track

        self.log, self.track, self.loss = log, Track("step", steps, quiet=True), None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.track.restart(state.global_step)  # a resumed run starts past 0

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        for key, value in (logs or {}).items():
            if key == "loss":
                self.loss = float(value)
            elif key.startswith("eval_") and not key.endswith(("_runtime", "_per_second")):
                self.log(f"step {state.global_step}: {key.removeprefix('eval_')} {float(value):.4f}")

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        line = self.track.crossed(state.global_step)
        if line:
            self.log(line + (f", loss {self.loss:.4f}" if self.loss is not None else ""))
