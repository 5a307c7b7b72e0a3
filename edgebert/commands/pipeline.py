"""`edgebert pipeline`: a preset or recipe run end to end (distill → compress → export → bench), resumable."""

from __future__ import annotations

import argparse


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
        run.add_argument("--work", default=None, help="where the stages write (default: <OUT>.work)")
        run.add_argument("--resume", action="store_true", help="skip finished stages; continue distillation from its checkpoint")
        run.add_argument("--force", action="store_true", help="start over in --work and replace a non-empty --out")
        run.add_argument("--dry-run", action="store_true", help="check the recipe and every input, print the plan, write nothing")
        data = parser.add_argument_group(
            "data (a file, or a dataset: glue/TASK:SPLIT, hf:NAME[:CONFIG]:SPLIT; replaces the recipe's value)"
        )
        data.add_argument(
            "--corpus", nargs="+", default=None,
            help="distillation text: files (.gz ok), dirs, STS-B csv, SST-2 tsv, datasets (required unless the recipe names it)",
        )  # fmt: skip
        data.add_argument("--eval-sts", default=None, help="STS pairs to keep the best checkpoint on, e.g. glue/stsb:train")
        data.add_argument("--sts", default=None, help="STS pairs the bench scores retention on, e.g. glue/stsb:validation")
        data.add_argument("--sst2", default=None, help="SST-2 sentences added to the corpus (tsv or glue/sst2:train)")
        overrides = parser.add_argument_group("overrides")
        overrides.add_argument("--steps", type=int, default=None, help="distillation steps (overrides the recipe's distill.steps)")
        overrides.add_argument("--teacher", default=None, help="teacher dir or hub id (overrides the recipe's teacher)")
        overrides.add_argument("--cache-dir", default=None, help="where fitted teacher MLM heads are cached (default ~/.cache/edgebert)")
        overrides.add_argument("--quiet", action="store_true", help="only the final summary")

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.errors import UserError
        from edgebert.pipeline import (
            format_plan,
            load_preset,
            load_recipe,
            plan_pipeline,
            run_pipeline,
        )

        recipe = load_preset(args.preset) if args.preset else load_recipe(args.recipe)
        if args.steps is not None:
            if args.steps < 1:
                raise UserError(f"--steps must be at least 1, got {args.steps}")
            recipe.distill.steps = args.steps
        if args.teacher:
            recipe.teacher = args.teacher
        names = ("work", "resume", "force", "corpus", "eval_sts", "sts", "sst2", "cache_dir")
        options = {name: getattr(args, name) for name in names}
        if args.dry_run:
            print("\n".join(format_plan(plan_pipeline(recipe, args.out, **options))))
            return 0
        report = run_pipeline(recipe, args.out, quiet=args.quiet, **options)
        s = report.summary
        for row in s["headline"]:
            mb = f"{row['mb']:.2f} MB" if row["mb"] is not None else "–"
            ret = f"{row['sts_retention'] * 100:.1f} %" if row["sts_retention"] is not None else "–"
            lat = f"{row['latency_ms']:.2f} ms" if row["latency_ms"] is not None else "–"
            print(f"{row['label']:<24} {row['status']:<8} {mb:>10}  STS retention {ret:>7}  latency {lat}")
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
