"""Keyword-argument forms of the `bench` and `pipeline` verbs (`edgebert.bench(...)`, `edgebert.pipeline(...)`).

Their options, and their defaults, are the fields of `edgebert.config.BenchConfig` / `PipelineConfig`, shared with
the commands (which call `run_bench_options` / `load_recipe_for` too). Heavy modules load only when a function runs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebert import validate
from edgebert.config import BenchConfig, PipelineConfig
from edgebert.errors import UserError
from edgebert.options import checked, keyword_options

if TYPE_CHECKING:
    from edgebert.bench.harness import BenchOutcome
    from edgebert.pipeline.recipe import Recipe
    from edgebert.pipeline.run import PipelineReport


@keyword_options(BenchConfig)
def bench(items: list[str], out: str | Path, **options: Any) -> BenchOutcome:
    """`edgebert bench ITEMS --out OUT ...`: measure every item ([LABEL=]PATH strings) and write the report to `out`.

    Same options and defaults as the command (seq_len / batch / threads: one int or a list; sts_limit_for:
    {"tfjs": 200}). Bad input raises UserError before anything is measured; item failures are recorded in the
    report, not raised.
    """
    return run_bench_options(items, out, BenchConfig(**checked(BenchConfig, options, "bench")))


def run_bench_options(items: list[str], out: str | Path, options: BenchConfig, command: list[str] | None = None) -> BenchOutcome:
    """Plan and run a bench of `items` into `out` as `options` say (`command`: the command line, for the report)."""
    from edgebert.bench.harness import plan_bench, run_bench

    run = plan_bench(items, options, command)
    if options.quiet:
        return run_bench(run, out, force=options.force, echo=lambda _: None)
    return run_bench(run, out, force=options.force)


def load_recipe_for(recipe: Recipe | str | Path | None, preset: str | None) -> Recipe:
    """A private copy of the Recipe given, or the recipe file / preset loaded; exactly one of them."""
    from edgebert.pipeline.recipe import Recipe, load_preset, load_recipe

    if (recipe is None) == (preset is None):
        raise UserError("pass exactly one of recipe (a Recipe or a TOML file) and preset (e.g. 'tiny')")
    if preset is not None:
        if not isinstance(preset, str):
            raise UserError(f"preset must be a name such as 'tiny', got {preset!r}")
        return load_preset(preset)
    if isinstance(recipe, Recipe):
        return copy.deepcopy(recipe)  # the overrides must not change the caller's object
    validate.path_like("recipe", recipe, optional=False)
    return load_recipe(recipe)


@keyword_options(PipelineConfig)
def pipeline(
    recipe: Recipe | str | Path | None = None,
    out: str | Path | None = None,
    *,
    preset: str | None = None,
    **options: Any,
) -> PipelineReport:
    """`edgebert pipeline --recipe FILE | --preset NAME --out OUT ...`: the recipe end to end, report in `out`.

    `recipe` is a `Recipe` (not changed) or a TOML file; `steps` and `teacher` override the recipe's
    distill.steps and teacher as the command's flags do. Bad input raises UserError before anything is written.
    """
    from edgebert.pipeline.run import run_pipeline

    config = PipelineConfig(**checked(PipelineConfig, options, "pipeline"))
    loaded = load_recipe_for(recipe, preset)
    validate.path_like("--out", out, optional=False)
    return run_pipeline(loaded, out, config)
