"""The `small` preset's heal stage (the teacher distilled into its pruned student) trained on a 4-bit weight grid.

    python benchmarks/suites/heal_on_grid.py GRID OUT STEPS WORK TEXT [SEED]

WORK is the preset's work dir after its compress stage (`edgebert pipeline --preset small --corpus TEXT STS SST
... --work WORK`): its pruned student, prepared sentence sets, STS pairs and teacher cache are read from there; TEXT
is the run's text corpus (its first --corpus). The stage runs with the preset's [distill] losses and [compress] heal
settings (`Recipe.heal_kwargs`, what the pipeline's heal stage passes to `distill()`), plus `heal_weight_grid = GRID`
(edgebert/weight_grids.py): what `[compress] heal_weight_grid` does in a recipe. SEED replaces the preset's [distill]
seed (data order, dropout): a second run of the same heal.
"""

import sys
from pathlib import Path

from edgebert.distill import distill
from edgebert.pipeline import load_preset


def main() -> None:
    grid, out, steps, work, text = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5])
    recipe = load_preset("small")
    recipe.compress.heal_weight_grid = grid
    recipe.compress.heal_steps = steps
    if len(sys.argv) > 6:
        recipe.distill.seed = int(sys.argv[6])
    corpus = [text] + [work / "corpus" / name for name in ("stsb-train.txt", "sst2-train.txt", "augmented.txt")]
    distill("default", [str(p) for p in corpus], out, **recipe.heal_kwargs(work / "compress" / "student"),
            eval_sts=str(work / "corpus" / "eval-sts.csv"), teacher_cache=str(work / "teacher-cache"))  # fmt: skip


if __name__ == "__main__":
    main()
