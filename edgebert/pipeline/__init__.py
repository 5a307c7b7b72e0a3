"""`edgebert pipeline`: a recipe (TOML) run end to end — distill → compress → export → bench → report."""

from edgebert.pipeline.recipe import Recipe, load_preset, load_recipe, parse_recipe
from edgebert.pipeline.run import PipelineReport, run_pipeline

__all__ = ["PipelineReport", "Recipe", "load_preset", "load_recipe", "parse_recipe", "run_pipeline"]
