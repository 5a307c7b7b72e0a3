"""`edgebert pipeline`: a recipe (TOML) run end to end — distill → compress → export → bench → report."""

from edgebert.pipeline.recipe import Recipe, load_preset, load_recipe, parse_recipe
from edgebert.pipeline.run import (
    PipelineReport,
    Plan,
    format_plan,
    plan_pipeline,
    run_pipeline,
)

__all__ = ["PipelineReport", "Plan", "Recipe", "format_plan", "load_preset", "load_recipe", "parse_recipe", "plan_pipeline", "run_pipeline"]
