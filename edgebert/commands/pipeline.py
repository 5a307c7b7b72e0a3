"""`edgebert pipeline`: a preset or recipe run end to end (distill → compress → export → bench), resumable."""

from __future__ import annotations

import argparse

from edgebert.config import PipelineConfig
from edgebert.options import add_options, from_args


class PipelineCommand:
    """`edgebert pipeline`: one recipe → student, verified exports, a bench report and the targets' verdicts."""

    name = "pipeline"
    help = "run a preset or recipe end to end: distill → compress → export every target → bench, resumable"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        required = parser.add_argument_group("required")
        which = required.add_mutually_exclusive_group(required=True)
        which.add_argument("--preset", default=None, help="a shipped recipe: edgebert/pipeline/presets/<NAME>.toml (small, tiny)")
        which.add_argument("--recipe", default=None, help="a recipe TOML file (see edgebert/pipeline/presets/ for the format)")
        required.add_argument("--out", required=True, help="report directory (report.md/json/png, pipeline.json)")
        run = parser.add_argument_group("run")
        data = parser.add_argument_group(
            "data", "a file, or a dataset: glue/TASK:SPLIT, hf:NAME[:CONFIG]:SPLIT; replaces the recipe's value"
        )
        add_options(parser, PipelineConfig, {"run": run, "data": data})
        run.add_argument("--dry-run", action="store_true", help="check the recipe and every input, print the plan, write nothing")

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.api import load_recipe_for
        from edgebert.pipeline import format_plan, plan_pipeline, run_pipeline

        recipe = load_recipe_for(args.recipe, args.preset)
        options = PipelineConfig(**from_args(PipelineConfig, args))
        if args.dry_run:
            print("\n".join(format_plan(plan_pipeline(recipe, args.out, options))))
            return 0
        report = run_pipeline(recipe, args.out, options)
        s = report.summary
        for row in s["headline"]:
            mb = f"{row['mb']:.2f} MB" if row["mb"] is not None else "–"
            what, value = ("accuracy", row.get("retention")) if row.get("accuracy") is not None else ("STS", row["sts_retention"])
            ret = f"{value * 100:.1f} %" if value is not None else "–"
            lat = f"{row['latency_ms']:.2f} ms" if row["latency_ms"] is not None else "–"
            print(f"{row['label']:<24} {row['status']:<8} {mb:>10}  {what} retention {ret:>7}  latency {lat}")
        for name, verdict in s["targets"].items():
            if name == "all_met":
                continue
            values = [r["value"] for r in verdict.get("exports", {}).values()] or [verdict.get("value")]
            shown = ", ".join("–" if v is None else f"{v:g}" for v in values)
            op = "≤" if name.startswith("max_") else "≥"
            met = f"not evaluated ({verdict['not_evaluated']})" if verdict["met"] is None else "met" if verdict["met"] else "NOT met"
            print(f"target {name} {op} {verdict['limit']:g}: {met} ({shown})")
        for skipped in s["skipped"]:
            print(f"skipped: {skipped['message']}")
        print(f"stages: {s['total_stage_wall_s']:.0f} s | targets met: {s['targets']['all_met']} | report: {report.out_dir}")
        if s["bench"]["failed_items"]:
            import sys

            sys.stderr.write(f"edgebert: {len(s['bench']['failed_items'])} bench item(s) failed: {', '.join(s['bench']['failed_items'])}\n")
            return 1
        return 0
