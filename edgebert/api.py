"""Keyword-argument forms of the `bench` and `pipeline` verbs (`edgebert.bench(...)`, `edgebert.pipeline(...)`).

`distill`, `compress` and `export` already take the CLI's options as keyword arguments; `bench` and `pipeline` take
a prepared `BenchConfig` / `Recipe`, so these two functions build those from the CLI's options, as the commands do.
Heavy modules load only when a function runs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebert import validate
from edgebert.errors import UserError

if TYPE_CHECKING:
    from edgebert.bench.harness import BenchOutcome
    from edgebert.pipeline.recipe import Recipe
    from edgebert.pipeline.run import PipelineReport

BENCH_TARGETS = ("pytorch", "onnx", "tflite", "tfjs")


def _int_list(value: Any) -> Any:
    """An int as [int], a list/tuple as a list; anything else unchanged (the job check names it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    return list(value) if isinstance(value, (list, tuple)) else value


def _target_limits(value: Any) -> dict[str, int]:
    """`sts_limit_for` ({"tfjs": 200}): a dict keyed by bench target; the numbers are checked with the job."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(k in BENCH_TARGETS for k in value):
        raise UserError(f"sts_limit_for must be a dict {{TARGET: N}} with TARGET one of {', '.join(BENCH_TARGETS)}, got {value!r}")
    return dict(value)


def bench(
    items: list[str],
    out: str | Path,
    *,
    reference: str | None = None,
    sts: str | Path | None = None,
    sts_limit: int | None = None,
    sts_limit_for: dict[str, int] | None = None,
    sst2: str | Path | None = None,
    sst2_limit: int | None = 1000,
    seq_len: int | list[int] = 128,
    batch: int | list[int] = 1,
    threads: int | list[int] = 1,
    warmup: int = 5,
    repeats: int = 30,
    torch_int8: bool = False,
    tokenizer: str | Path | None = None,
    pooling: str = "mean",
    timeout: float | None = None,
    in_process: bool = False,
    force: bool = False,
    quiet: bool = False,
) -> BenchOutcome:
    """`edgebert bench ITEMS --out OUT ...`: measure every item ([LABEL=]PATH strings) and write the report to `out`.

    Same options and defaults as the command (seq_len / batch / threads: one int or a list). Bad input raises
    UserError before anything is measured; item failures are recorded in the report, not raised.
    """
    from edgebert.bench.harness import build_config, check_numbers, run_bench
    from edgebert.bench.measure import MeasureJob

    validate.path_like("--sts", sts)
    validate.path_like("--sst2", sst2)
    validate.path_like("--tokenizer", tokenizer)
    job = MeasureJob(
        seq_lens=_int_list(seq_len),
        batches=_int_list(batch),
        threads=_int_list(threads),
        warmup=warmup,
        repeats=repeats,
        sts_path=str(sts) if sts is not None else None,
        sts_limit=sts_limit,
        sts_limits=_target_limits(sts_limit_for),
        sst2_path=str(sst2) if sst2 is not None else None,
        sst2_limit=sst2_limit,
    )
    check_numbers(job, timeout)
    job.seq_lens = list(dict.fromkeys(job.seq_lens))
    job.sts_max_length = max(job.seq_lens)
    config = build_config(
        items,
        reference=reference,
        torch_int8=torch_int8,
        tokenizer=str(tokenizer) if tokenizer is not None else None,
        pooling=pooling,
        job=job,
        isolate=not in_process,
        timeout_s=timeout,
    )
    if quiet:
        return run_bench(config, out, force=force, echo=lambda _: None)
    return run_bench(config, out, force=force)


def _recipe(recipe: Recipe | str | Path | None, preset: str | None) -> Recipe:
    """A private copy of the Recipe given, or the recipe file / preset loaded; exactly one of them."""
    from edgebert.pipeline.recipe import Recipe, load_preset, load_recipe

    if (recipe is None) == (preset is None):
        raise UserError("pass exactly one of recipe (a Recipe or a TOML file) and preset (e.g. 'tiny')")
    if preset is not None:
        if not isinstance(preset, str):
            raise UserError(f"preset must be a name such as 'tiny', got {preset!r}")
        return load_preset(preset)
    if isinstance(recipe, Recipe):
        return copy.deepcopy(recipe)  # the overrides below must not change the caller's object
    validate.path_like("recipe", recipe, optional=False)
    return load_recipe(recipe)


def pipeline(
    recipe: Recipe | str | Path | None = None,
    out: str | Path | None = None,
    *,
    preset: str | None = None,
    steps: int | None = None,
    teacher: str | Path | None = None,
    work: str | Path | None = None,
    resume: bool = False,
    force: bool = False,
    corpus: list[str] | None = None,
    cache_dir: str | Path | None = None,
    quiet: bool = False,
) -> PipelineReport:
    """`edgebert pipeline --recipe FILE | --preset NAME --out OUT ...`: the recipe end to end, report in `out`.

    `recipe` is a `Recipe` (not changed) or a TOML file; `steps` and `teacher` override the recipe's
    distill.steps and teacher as the command's flags do. Bad input raises UserError before anything is written.
    """
    from edgebert.pipeline.run import run_pipeline

    loaded = _recipe(recipe, preset)
    if steps is not None:
        loaded.distill.steps = validate.integer("--steps", steps, 1)
    if teacher is not None:
        validate.path_like("--teacher", teacher, optional=False)
        loaded.teacher = str(teacher)
    validate.path_like("--out", out, optional=False)
    return run_pipeline(
        loaded, out, work=work, resume=resume, force=force, corpus=corpus, cache_dir=cache_dir, quiet=quiet
    )
