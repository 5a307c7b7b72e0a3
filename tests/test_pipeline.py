"""edgebert pipeline: recipe parsing, a tiny end-to-end run, --resume after an interruption, bad input."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from edgebert.errors import UserError
from edgebert.pipeline import load_preset, parse_recipe, run_pipeline
from edgebert.pipeline import run as pipeline_run
from edgebert.data import table_sentences

WORDS = ["the", "a", "man", "woman", "dog", "cat", "plays", "playing", "guitar", "music", "stage", "quick", "brown", "fox", "jumps", "over", "lazy", "people", "nation", "year"]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pipeline-data")
    rng = random.Random(0)
    (d / "corpus.txt").write_text("\n".join(_sentence(rng) for _ in range(120)) + "\n")
    rows = [f"{_sentence(rng)},{_sentence(rng)},{rng.uniform(0, 5):.1f}" for _ in range(24)]
    (d / "sts.csv").write_text("\n".join(rows) + "\n")
    (d / "sst.tsv").write_text("sentence\tlabel\n" + "".join(f"{_sentence(rng)} \t{i % 2}\n" for i in range(10)))
    return {"dir": d, "corpus": d / "corpus.txt", "sts": d / "sts.csv", "sst": d / "sst.tsv"}


def tiny_recipe(teacher: Path, data: dict[str, Path], compress: bool = True) -> str:
    return f"""
name = "test"
teacher = "{teacher}"
corpus = ["{data['corpus']}", "{data['sts']}", "{data['sst']}"]

[distill]
student_layers = 1
steps = 3
batch_size = 4
seq_len = 32
head_steps = 5
eval_sts = "{data['sts']}"
eval_sts_limit = 12
eval_steps = 3
logging_steps = 1

[compress]
prune_heads = {0.25 if compress else 0}
calibration_samples = 8
seq_len = 32

[export]
targets = {{ onnx = ["none", "int8"] }}
seq_len = 32
teacher_targets = ["onnx"]

[bench]
sts = "{data['sts']}"
seq_len = [32]
warmup = 1
repeats = 3
in_process = true

[targets]
max_mb = 100.0
min_sts_retention = -100.0
min_onnx_speedup = 1000.0
"""


# ------------------------------------------------------------------------------------------------ recipes


def test_presets_parse() -> None:
    for name in ("small", "tiny"):
        recipe = load_preset(name)
        assert recipe.name == name
        assert set(recipe.export.targets) == {"onnx", "tflite", "tfjs"}
        assert recipe.targets.max_mb and recipe.targets.min_sts_retention and recipe.targets.min_onnx_speedup
        assert recipe.distill.embedding_dim and recipe.compress.enabled and recipe.compress.heal_steps
        assert recipe.distill.group_by_length
    small, tiny = load_preset("small"), load_preset("tiny")
    assert tiny.targets.max_mb < small.targets.max_mb
    # small keeps the whole vocabulary (it fits in 8 MB at E=128); tiny trims it for its 4 MB
    assert not small.vocab.trim and tiny.vocab.trim
    assert tiny.compress.prune_heads > small.compress.prune_heads and tiny.distill.embedding_dim < small.distill.embedding_dim
    # both heal the pruned student from the teacher's outputs, cached once per run
    assert all(r.compress.heals_from_teacher and r.distill.teacher_cache and r.distill.sentences for r in (small, tiny))


def test_recipe_parses_sections_and_defaults() -> None:
    recipe = parse_recipe('[distill]\nstudent_layers = 2\nsteps = 7\n[export]\ntargets = { onnx = ["int8"] }\n')
    assert recipe.distill.student_layers == 2 and recipe.distill.steps == 7
    assert recipe.distill.kwargs()["alpha_ce"] is None  # distill()'s default: auto, chosen from the teacher
    assert "eval_sts" not in recipe.distill.kwargs()
    assert recipe.export.student_exports() == [("onnx", "int8")]
    assert not recipe.compress.enabled
    assert recipe.fingerprint() == parse_recipe('[distill]\nstudent_layers = 2\nsteps = 7\n[export]\ntargets = { onnx = ["int8"] }\n').fingerprint()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[distill]\nstudent_layerz = 2\n", "distill.student_layerz"),
        ("[distil]\nsteps = 2\n", "distil"),
        ("colour = 'red'\n", "colour"),
        ("[targets]\nmax_megabytes = 4\n", "targets.max_megabytes"),
        ("[distill]\nsteps = 'many'\n", "distill.steps"),
        ("[export]\ntargets = { onnx = ['int3'] }\n", "int3"),
        ("[export]\ntargets = { coreml = ['none'] }\n", "coreml"),
        ("[distill\n", "not valid TOML"),
        ("[distill]\nwarmup_ratio = 5.0\n", r"distill.warmup_ratio must be a finite number in \[0, 1\)"),
        ("[distill]\nlr = nan\n", "distill.lr must be a finite number"),
        ("[distill]\nthreads = -1\n", "distill.threads must be at least 1"),
        ("[distill]\nsave_steps = -1\n", "distill.save_steps must be at least 1"),
        ("[distill]\npacking = 'zip'\n", "packing 'zip' is unknown"),
        ("[distill]\nlayer_map = [0, -1]\n", "layer_map entries must be at least 0"),
        ("[compress]\nprune_heads = 1.5\n", "prune_heads must be a fraction"),
        ("[compress]\nheal_lr = inf\n", "compress.heal_lr must be a finite number"),
        ("[compress]\nimportance = 'vibes'\n", "importance 'vibes' is unknown"),
        ("[compress]\nheal_from = 'parent'\n", "compress.heal_from 'parent' is unknown; choose one of: student, teacher"),
        ("[compress]\nheal_weight_grid = 'onnx-int3'\n", "unknown weight grid 'onnx-int3'; choose one of: onnx-int4, executorch-int4"),
        ("[compress]\nheal_weight_grid = 'onnx-int4'\n", 'heal_weight_grid needs the heal stage: heal_steps > 0, heal_from = "teacher"'),
        ("[distill]\nteacher_cache = 3\n", "distill.teacher_cache must be true, false or a directory"),
        ("[compress]\nseq_len = 1\n", "compress.seq_len must be at least 2"),
        ("[export]\nseq_len = 1\n", "export.seq_len must be at least 2"),
        ("[export]\nmin_cosine = -5.0\n", r"export.min_cosine must be a finite number in \(0, 1\]"),
        ("[bench]\nthreads = [0]\n", "bench.threads must be at least 1"),
        ("[bench]\ntimeout = -1.0\n", "bench.timeout must be a finite number"),
        ("[bench]\nsts_limit_for = { tfjs = 1 }\n", "sts_limit_for tfjs must be at least 2"),
        ("[targets]\nmax_mb = nan\n", "targets.max_mb must be a finite number"),
    ],
)
def test_recipe_errors_name_the_key(text: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        parse_recipe(text)


def test_recipe_extends_a_preset_key_by_key() -> None:
    small = load_preset("small")
    recipe = parse_recipe('extends = "small"\nname = "mine"\n[compress]\nheal_steps = 30\n[export]\ntargets = {}\n'
                          'teacher_targets = []\n[targets]\nmax_wall_minutes = 5\n')  # fmt: skip
    assert recipe.name == "mine" and recipe.description == small.description
    assert recipe.distill == small.distill  # untouched sections: the preset's
    assert (recipe.compress.heal_steps, recipe.compress.prune_heads) == (30, small.compress.prune_heads)  # key by key
    assert recipe.export.targets == {} and recipe.export.seq_len == small.export.seq_len
    assert recipe.targets.max_wall_minutes == 5 and recipe.targets.max_mb is None  # [targets] replaced whole


def test_recipe_heal_kwargs_are_the_distill_recipe_at_the_heal_settings() -> None:
    """`Recipe.heal_kwargs`: what the heal stage (and benchmarks/suites/heal_on_grid.py) passes to `distill()`."""
    from edgebert.config import STUDENT_SHAPE_OPTIONS

    recipe = parse_recipe('extends = "small"\n[compress]\nheal_weight_grid = "onnx-w4a8"\nheal_seq_len = 48\n')
    kwargs = recipe.heal_kwargs(Path("pruned"))
    c, d = recipe.compress, recipe.distill
    assert (kwargs["steps"], kwargs["lr"], kwargs["seq_len"]) == (c.heal_steps, c.heal_lr, 48)
    assert kwargs["student_init"] == "pruned" and kwargs["weight_grid"] == "onnx-w4a8"
    assert (kwargs["alpha_pooled"], kwargs["sentences"], kwargs["seed"]) == (d.alpha_pooled, d.sentences, d.seed)
    assert kwargs["save_steps"] is kwargs["eval_steps"] is None and not set(STUDENT_SHAPE_OPTIONS) & set(kwargs)
    assert load_preset("small").heal_kwargs("pruned")["weight_grid"] is None  # no grid: the [distill] one, none


def test_the_demo_apps_recipe_is_the_small_presets_student() -> None:
    from edgebert.pipeline.recipe import load_recipe

    demo, small = load_recipe(Path(__file__).resolve().parents[1] / "demo_app" / "student.toml"), load_preset("small")
    # the same student shape; the text (no sentence split, no augmented variants), the teacher cache and the
    # distillation schedule (CI time) and the token cosine its 300 healing steps were measured with differ
    schedule = ("steps", "lr", "eval_steps", "save_steps", "logging_steps", "augment")
    same = replace(demo.distill, sentences=True, teacher_cache=True, alpha_cos=small.distill.alpha_cos,
                   **{k: getattr(small.distill, k) for k in schedule})  # fmt: skip
    assert same == small.distill
    assert (demo.distill.alpha_cos, small.distill.alpha_cos) == (1.0, 0.0)
    assert (demo.distill.steps, demo.distill.lr, demo.distill.augment, small.distill.augment) == (60, 1e-4, 0, 1)
    assert (demo.compress.prune_heads, demo.compress.prune_ffn) == (small.compress.prune_heads, small.compress.prune_ffn)


@pytest.mark.parametrize(
    ("text", "needle"),
    [('extends = "huge"\n', "extends = 'huge'.*not a shipped preset"), ("extends = 3\n", "not a shipped preset"),
     ('extends = "small"\n[distill]\nbogus = 1\n', "bogus")],
)  # fmt: skip
def test_bad_extends_is_one_line(text: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        parse_recipe(text)


def test_table_sentences(data: dict[str, Path]) -> None:
    sts = table_sentences(data["sts"])
    assert 24 < len(sts) <= 48 and not any(c.isdigit() or c == "," for s in sts for c in s)  # no scores, no commas
    sst = table_sentences(data["sst"])
    assert len(sst) == 10 and "sentence" not in sst and not any(c.isdigit() or c == "\t" for s in sst for c in s)


# ----------------------------------------------------------------------------------------------- full run


@pytest.fixture(scope="module")
def full_run(tiny_bert: Path, data: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("pipeline-run")
    recipe_file = base / "recipe.toml"
    recipe_file.write_text(tiny_recipe(tiny_bert, data, compress=False))
    from edgebert.pipeline import load_recipe

    report = run_pipeline(load_recipe(recipe_file), base / "out", work=base / "work", cache_dir=base / "cache", quiet=True)
    return {"report": report, "base": base}


def test_full_run_writes_report_and_verdicts(full_run: dict[str, object]) -> None:
    report = full_run["report"]
    out = report.out_dir
    for name in ("report.json", "report.md", "report.png", "pipeline.json", "recipe.toml"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "pipeline.json").read_text())
    stages = {s["stage"]: s for s in summary["stages"]}
    assert list(stages) == ["distill", "export:teacher-onnx", "export:student-onnx", "export:student-onnx-int8", "bench"]
    assert all(s["status"] == "done" and s["wall_s"] > 0 for s in stages.values())
    bench = json.loads((out / "report.json").read_text())
    labels = [i["label"] for i in bench["items"]]
    assert labels[:2] == ["teacher", "teacher-onnx"] and "student-onnx-int8" in labels
    assert bench["reference"] == "teacher" and all(i["status"] == "ok" for i in bench["items"])
    t = summary["targets"]
    assert t["max_mb"]["met"] is True and set(t["max_mb"]["exports"]) == {"student-onnx", "student-onnx-int8"}
    assert t["min_sts_retention"]["met"] is True
    assert t["min_onnx_speedup"]["met"] is False and t["min_onnx_speedup"]["exports"]["student-onnx"]["value"] > 0
    assert t["all_met"] is False
    assert [r["label"] for r in summary["headline"]] == ["student-onnx", "student-onnx-int8"]


def test_compress_stage_feeds_the_exports(tiny_bert: Path, data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Stops before the bench (the bench of a pruned model is covered in test_bench.py).
    seen: list[Path] = []
    monkeypatch.setattr(pipeline_run, "run_export", lambda target, quant, model, out, *a, **k: seen.append(Path(model)))
    monkeypatch.setattr(pipeline_run, "run_bench_stage", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stop here")))
    with pytest.raises(RuntimeError, match="stop here"):
        run_pipeline(parse_recipe(tiny_recipe(tiny_bert, data)), tmp_path / "out", work=tmp_path / "work", cache_dir=tmp_path / "cache", quiet=True)
    pruned = tmp_path / "work" / "compress" / "student"
    config = json.loads((pruned / "config.json").read_text())
    assert config["pruned_heads"] and (tmp_path / "work" / "corpus" / "calibration.txt").is_file()
    assert seen[0] == tiny_bert and seen[1:] == [pruned, pruned]  # teacher-onnx, then the pruned student's exports
    state = json.loads((tmp_path / "work" / "pipeline-state.json").read_text())
    assert state["stages"]["compress"]["status"] == "done"


def test_a_refused_export_is_a_result_not_the_end_of_the_run(tiny_bert: Path, data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parity gate refusing one export (after minutes of distillation) leaves the other exports, the bench and
    the report: the refusal is in pipeline.json and its targets are not met."""
    from edgebert.errors import VerificationError

    real_export = pipeline_run.run_export

    def export(target, quant, model, out, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if quant == "int8":
            raise VerificationError("parity below the gate: min cosine 0.9812 < 0.99; recipes that hold here: fp16")
        return real_export(target, quant, model, out, *a, **k)

    monkeypatch.setattr(pipeline_run, "run_export", export)
    recipe = parse_recipe(tiny_recipe(tiny_bert, data, compress=False))
    report = run_pipeline(recipe, tmp_path / "out", work=tmp_path / "work", cache_dir=tmp_path / "cache", quiet=True)
    summary = json.loads((report.out_dir / "pipeline.json").read_text())
    assert summary["refused_exports"] == {"student-onnx-int8": "parity below the gate: min cosine 0.9812 < 0.99; recipes that hold here: fp16"}
    rows = {r["label"]: r for r in summary["headline"]}
    assert rows["student-onnx"]["status"] == "ok" and rows["student-onnx-int8"]["status"] == "refused"
    assert summary["targets"]["max_mb"]["exports"]["student-onnx-int8"] == {"value": None, "met": False, "status": "refused"}
    assert summary["targets"]["all_met"] is False
    assert json.loads((tmp_path / "work" / "pipeline-state.json").read_text())["stages"]["export:student-onnx-int8"]["status"] == "refused"


def test_int8_static_exports_calibrate_on_corpus_passages(tiny_bert: Path, data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}
    monkeypatch.setattr(pipeline_run, "run_export", lambda target, quant, model, out, *a, **k: seen.update({f"{target}-{quant}": k.get("calibration")}))
    monkeypatch.setattr(pipeline_run, "run_bench_stage", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stop here")))
    text = tiny_recipe(tiny_bert, data, compress=False).replace('targets = { onnx = ["none", "int8"] }', 'targets = { onnx = ["int8", "int8-static"], tflite = ["int8-static"] }')
    with pytest.raises(RuntimeError, match="stop here"):
        run_pipeline(parse_recipe(text), tmp_path / "out", work=tmp_path / "work", cache_dir=tmp_path / "cache", quiet=True)
    calibration = tmp_path / "work" / "corpus" / "export-calibration.txt"
    assert seen == {"onnx-none": None, "onnx-int8": None, "onnx-int8-static": calibration, "tflite-int8-static": calibration}
    assert len(calibration.read_text().splitlines()) > 10  # passages sampled from the prepared corpus
    with pytest.raises(UserError, match="tfjs has unknown quantization 'int8-static'"):
        parse_recipe('[export]\ntargets = { tfjs = ["int8-static"] }\n')


@pytest.mark.parametrize("embedding_dim", [None, 8])
def test_heal_and_vocab_stages_feed_the_exports(
    tiny_bert: Path, data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedding_dim: int | None
) -> None:
    """Distill -> prune + heal -> trim, for a BERT student and for a factorised (ALBERT) one as the presets use."""
    seen: list[Path] = []
    monkeypatch.setattr(pipeline_run, "run_export", lambda target, quant, model, out, *a, **k: seen.append(Path(model)))
    monkeypatch.setattr(pipeline_run, "run_bench_stage", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stop here")))
    text = tiny_recipe(tiny_bert, data).replace("[compress]\n", "[compress]\nheal_steps = 2\n") + "\n[vocab]\ntrim = true\n"
    if embedding_dim:
        text = text.replace("[distill]\n", f"[distill]\nembedding_dim = {embedding_dim}\n")
    with pytest.raises(RuntimeError, match="stop here"):
        run_pipeline(parse_recipe(text), tmp_path / "out", work=tmp_path / "work", cache_dir=tmp_path / "cache", quiet=True)
    pruned, trimmed = tmp_path / "work" / "compress" / "student", tmp_path / "work" / "vocab" / "student"
    assert "healing" in json.loads((pruned / "edgebert.json").read_text())
    teacher_vocab = json.loads((tiny_bert / "config.json").read_text())["vocab_size"]
    config = json.loads((trimmed / "config.json").read_text())
    assert config["pruned_heads"] and config["vocab_size"] < teacher_vocab
    assert config["model_type"] == ("albert" if embedding_dim else "bert") and config.get("embedding_size", embedding_dim) == embedding_dim
    assert seen[1:] == [trimmed, trimmed]
    state = json.loads((tmp_path / "work" / "pipeline-state.json").read_text())
    assert state["stages"]["vocab"]["status"] == "done"


def test_heal_from_teacher_is_a_stage_on_the_cached_teacher(tiny_bert: Path, data: dict[str, Path], tmp_path: Path) -> None:
    """heal_from = "teacher": prune, then distil the teacher into the pruned student (the [distill] recipe, the run's
    teacher cache); the checkpoint pairs are kept out of the corpus; pipeline.json names the final student and each
    training stage's scores."""
    text = tiny_recipe(tiny_bert, data).replace("[compress]\n", '[compress]\nheal_steps = 4\nheal_from = "teacher"\nheal_weight_grid = "onnx-int4"\n')
    text = text.replace("[distill]\n", "[distill]\nalpha_mlm = 0\nalpha_ce = 0\nalpha_cos = 1\nalpha_pooled = 1\nmlm_probability = 0\n"
                        "teacher_cache = true\nsentences = true\naugment = 2\naugment_p = 0.5\n").replace('targets = { onnx = ["none", "int8"] }', 'targets = { onnx = ["none"] }')
    plan = "\n".join(pipeline_run.format_plan(pipeline_run.plan_pipeline(parse_recipe(text), tmp_path / "out", work=str(tmp_path / "work"))))
    assert "heal → " in plan and "distil the teacher into the pruned student, 4 steps" in plan and "teacher-cache" in plan
    assert "on the onnx-int4 weight grid" in plan
    assert "2 word-replacement variant(s) of each labelled-set sentence (p 0.5, 8 neighbours)" in plan
    report = run_pipeline(parse_recipe(text), tmp_path / "out", work=tmp_path / "work", cache_dir=tmp_path / "cache", quiet=True)
    summary = json.loads((report.out_dir / "pipeline.json").read_text())
    work = tmp_path / "work"
    stages = {s["stage"]: s for s in summary["stages"]}
    assert list(stages)[:3] == ["distill", "compress", "heal"] and summary["student"] == str(work / "heal" / "student")
    assert "healing" not in json.loads((work / "compress" / "student" / "edgebert.json").read_text())  # pruned only
    healed = json.loads((work / "heal" / "student" / "edgebert.json").read_text())
    assert healed["distill"]["init"]["from"] == str(work / "compress" / "student") and healed["distill"]["steps"] == 4
    assert healed["distill"]["teacher_cache"]["dir"].startswith(str(work / "teacher-cache"))
    assert healed["distill"]["teacher_cache"]["hit"] is True  # built by the distill stage, read by the heal stage
    assert healed["model"]["weight_grid"]["name"] == "onnx-int4"  # heal_weight_grid: the heal stage trained on the grid
    assert "weight_grid" not in json.loads((work / "distill" / "student" / "edgebert.json").read_text())["model"]
    for name in ("distill", "heal"):
        scores = stages[name]["scores"]
        assert scores["metric"] == "sts_spearman" and {"teacher", "student_init", "student_final"} <= set(scores)
    assert "scores" not in stages["compress"] and "scores" not in stages["bench"]
    # 12 STS pairs choose checkpoints: none of their sentences is distilled on
    from edgebert.data import table_sentences

    chosen = set(table_sentences(work / "corpus" / "eval-sts.csv"))
    corpus = set((work / "corpus" / f"{data['dir'].name}-sts.txt").read_text().splitlines())
    assert chosen and not chosen & corpus and corpus
    # augment = 2: variants of the kept STS/SST sentences (none of a checkpoint sentence), read by both stages
    augmented = (work / "corpus" / "augmented.txt").read_text().splitlines()
    kept = corpus | set((work / "corpus" / f"{data['dir'].name}-sst.txt").read_text().splitlines())
    assert 0 < len(augmented) <= 2 * len(kept) and not set(augmented) & (kept | chosen)
    variant_of = {len(s.split()) for s in kept}
    assert all(len(v.split()) in variant_of for v in augmented)  # words swapped one for one
    assert all(any(len(set(v.split()) & set(s.split())) >= len(s.split()) // 2 for s in kept) for v in augmented[:5])
    for stage in ("distill", "heal"):
        sources = json.loads((work / stage / "student" / "edgebert.json").read_text())["distill"]["corpus"]["sources"]
        assert sources[-1] == str(work / "corpus" / "augmented.txt")


def test_checkpoint_pairs_are_spread_over_the_sts_file_not_its_first_genre(tmp_path: Path) -> None:
    """STS-B is ordered by genre: `eval_sts_limit` pairs are taken evenly over the file, so holding them out of the
    corpus does not remove one genre's text from it."""
    from edgebert.pipeline.corpus import write_sts_subset

    source = tmp_path / "sts.csv"
    source.write_text("".join(f"genre{i // 25} sentence {i},other {i},{i % 5}\n" for i in range(100)))
    subset = write_sts_subset(source, 10, tmp_path / "work" / "eval-sts.csv")
    rows = subset.read_text().splitlines()
    assert [r.split(",")[1] for r in rows] == [f"other {i}" for i in range(0, 100, 10)]
    assert {r.split()[0] for r in rows} == {"genre0", "genre1", "genre2", "genre3"}
    assert write_sts_subset(source, None, tmp_path / "unused.csv") == source


def test_teacher_cache_is_the_work_dirs_or_a_path_relative_to_the_recipe(tmp_path: Path) -> None:
    work = tmp_path / "work"
    assert parse_recipe("[distill]\nteacher_cache = true\n").distill.teacher_cache_dir(tmp_path, work) == work / "teacher-cache"
    assert parse_recipe("[distill]\nteacher_cache = false\n").distill.teacher_cache_dir(tmp_path, work) is None
    assert parse_recipe("").distill.teacher_cache_dir(tmp_path, work) is None
    shared = parse_recipe('[distill]\nteacher_cache = "caches/t"\n').distill
    assert shared.teacher_cache_dir(tmp_path, work) == tmp_path / "caches" / "t"
    assert "teacher_cache" not in shared.kwargs()  # the pipeline passes the resolved directory


def test_augment_without_labelled_set_sentences_is_a_skipped_step(tiny_bert: Path, data: dict[str, Path], tmp_path: Path) -> None:
    """`augment` rewrites the corpus's STS/SST sentences: a corpus of running text only runs without variants, and
    the plan and pipeline.json say so; bad values are refused; the knob is the pipeline's, not distill()'s."""
    text = tiny_recipe(tiny_bert, data, compress=False).replace("[distill]\n", "[distill]\naugment = 1\n")
    corpus, sts, sst = data["corpus"], data["sts"], data["sst"]
    text = text.replace(f'corpus = ["{corpus}", "{sts}", "{sst}"]', f'corpus = ["{corpus}"]')
    plan = pipeline_run.plan_pipeline(parse_recipe(text), tmp_path / "out", work=str(tmp_path / "work"))
    assert "skipped: no labelled-set sentences in the corpus" in "\n".join(pipeline_run.format_plan(plan))
    assert [s["step"] for s in plan.skipped] == ["distill"] and not (tmp_path / "work").exists()
    with_sets = pipeline_run.plan_pipeline(parse_recipe(tiny_recipe(tiny_bert, data).replace("[distill]\n", "[distill]\naugment = 1\n")),
                                           tmp_path / "out", work=str(tmp_path / "work"))  # fmt: skip
    assert with_sets.skipped == []
    for bad, match in (("augment = -1", "distill.augment"), ("augment_p = 0", "distill.augment_p"), ("augment_p = 1.5", "distill.augment_p"),
                       ("augment_k = 0", "distill.augment_k")):  # fmt: skip
        with pytest.raises(UserError, match=match):
            parse_recipe(f"[distill]\n{bad}\n")
    assert not {"augment", "augment_p", "augment_k"} & set(parse_recipe("[distill]\naugment = 1\n").distill.kwargs())


@pytest.mark.parametrize("section", ["[vocab]\nmin_count = 0\n", "[compress]\nheal_steps = 5\n"])
def test_bad_vocab_and_heal_keys_are_refused(section: str) -> None:
    with pytest.raises(UserError, match="vocab.min_count|heal_steps"):
        parse_recipe(section)


def test_second_run_without_resume_is_refused(full_run: dict[str, object], tiny_bert: Path, data: dict[str, Path]) -> None:
    base = full_run["base"]
    recipe = parse_recipe(tiny_recipe(tiny_bert, data))
    with pytest.raises(UserError, match="--resume"):
        run_pipeline(recipe, base / "out2", work=base / "work", quiet=True)
    assert not (base / "out2").exists()


# ------------------------------------------------------------------------------------------------- resume


def test_resume_after_interruption_skips_finished_stages(
    tiny_bert: Path, data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe_text = tiny_recipe(tiny_bert, data, compress=False)
    work, out = tmp_path / "work", tmp_path / "out"

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash in the bench stage")

    monkeypatch.setattr(pipeline_run, "run_bench_stage", boom)
    with pytest.raises(RuntimeError, match="simulated"):
        run_pipeline(parse_recipe(recipe_text), out, work=work, cache_dir=tmp_path / "cache", quiet=True)
    assert not out.exists()
    state = json.loads((work / "pipeline-state.json").read_text())
    assert state["stages"]["distill"]["status"] == "done"
    assert state["stages"]["bench"]["status"] == "failed" and "simulated" in state["stages"]["bench"]["error"]
    student_manifest = work / "distill" / "student" / "edgebert.json"
    export_manifest = work / "export" / "student-onnx-int8" / "edgebert.json"
    mtimes = (student_manifest.stat().st_mtime_ns, export_manifest.stat().st_mtime_ns)
    monkeypatch.undo()

    # a different recipe (here: more steps) cannot resume this run
    with pytest.raises(UserError, match="recipe differs"):
        run_pipeline(parse_recipe(recipe_text.replace("steps = 3", "steps = 4")), out, work=work, resume=True, quiet=True)

    calls: list[str] = []
    for name in ("run_distill", "run_export"):
        original = getattr(pipeline_run, name)

        def spy(*args: object, _name: str = name, _original: object = original, **kwargs: object) -> object:
            calls.append(_name)
            return _original(*args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(pipeline_run, name, spy)
    report = run_pipeline(parse_recipe(recipe_text), out, work=work, resume=True, cache_dir=tmp_path / "cache", quiet=True)
    assert calls == []  # nothing but the bench was redone
    assert (student_manifest.stat().st_mtime_ns, export_manifest.stat().st_mtime_ns) == mtimes
    summary = json.loads((out / "pipeline.json").read_text())
    stages = {s["stage"]: s for s in summary["stages"]}
    assert summary["runs"] == 2
    assert stages["distill"]["skipped_in_last_run"] is True and stages["distill"]["attempts"] == 1
    assert stages["bench"]["status"] == "done" and stages["bench"]["attempts"] == 2
    assert (out / "report.md").is_file() and report.summary["targets"]["max_mb"]["met"]

    # --resume of the finished run rewrites its own report; a foreign file in --out still needs --force
    run_pipeline(parse_recipe(recipe_text), out, work=work, resume=True, cache_dir=tmp_path / "cache", quiet=True)
    assert json.loads((out / "pipeline.json").read_text())["runs"] == 3
    with pytest.raises(UserError, match="recipe differs"):  # not "--out exists": the caller learns to --force
        run_pipeline(parse_recipe(recipe_text.replace("steps = 3", "steps = 4")), out, work=work, resume=True, quiet=True)
    (out / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="exists and is not empty"):
        run_pipeline(parse_recipe(recipe_text), out, work=work, resume=True, cache_dir=tmp_path / "cache", quiet=True)


# -------------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def cli():
    from edgebert.cli import main

    return main


def test_bad_input_exits_2(cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli(["pipeline", "--preset", "huge", "--out", str(out)]) == 2
    assert "--preset huge is unknown" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[distill]\nstudent_layerz = 1\n")
    assert cli(["pipeline", "--recipe", str(bad), "--out", str(out)]) == 2
    assert "distill.student_layerz" in capsys.readouterr().err
    good = tmp_path / "good.toml"
    good.write_text(tiny_recipe(tiny_bert, data))
    assert cli(["pipeline", "--recipe", str(good), "--out", str(out), "--corpus", str(tmp_path / "nope.txt")]) == 2
    assert "nope.txt does not exist" in capsys.readouterr().err
    assert cli(["pipeline", "--recipe", str(good), "--out", str(out), "--steps", "0"]) == 2
    with pytest.raises(SystemExit) as exc:
        cli(["pipeline", "--out", str(out)])  # neither --preset nor --recipe
    assert exc.value.code == 2
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("x")
    assert cli(["pipeline", "--recipe", str(good), "--out", str(out), "--work", str(foreign)]) == 2
    assert "holds no pipeline run" in capsys.readouterr().err
    assert not out.exists() and (foreign / "keep.txt").exists() and len(list(foreign.iterdir())) == 1


def test_out_or_work_never_overlaps_an_input(cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    mine = Path(shutil.copytree(data["dir"], tmp_path / "data"))
    local = {k: mine / v.name for k, v in data.items() if k != "dir"}
    good = tmp_path / "good.toml"
    good.write_text(tiny_recipe(tiny_bert, {**local, "dir": mine}))
    before = sorted(p.name for p in mine.iterdir())
    assert cli(["pipeline", "--recipe", str(good), "--out", str(mine), "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--out" in err and "contains the corpus" in err and len(err.splitlines()) == 1
    assert cli(["pipeline", "--recipe", str(good), "--out", str(tmp_path / "o"), "--work", str(tiny_bert / "w"), "--force"]) == 2
    assert "--work" in capsys.readouterr().err and not (tiny_bert / "w").exists()
    assert sorted(p.name for p in mine.iterdir()) == before and not (tmp_path / "o").exists()


def test_ctrl_c_says_the_finished_stages_are_kept(
    cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def ctrl_c(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("interrupted; checkpoints kept in somewhere: rerun with --resume to continue")

    monkeypatch.setattr(pipeline_run, "run_distill", ctrl_c)
    good = tmp_path / "good.toml"
    good.write_text(tiny_recipe(tiny_bert, data))
    out = tmp_path / "out"
    assert cli(["pipeline", "--recipe", str(good), "--out", str(out), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert f"the finished stages are kept in {out}.work: rerun with --resume" in err and "half-written" not in err


def test_unwritable_work_is_one_line(cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.toml"
    good.write_text(tiny_recipe(tiny_bert, data))
    assert cli(["pipeline", "--recipe", str(good), "--out", str(tmp_path / "o"), "--work", "/proc/w"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("edgebert: error: --work /proc/w is not writable") and len(err.splitlines()) == 1


def test_recipe_not_utf8_names_the_file(tmp_path: Path) -> None:
    from edgebert.pipeline import load_recipe

    path = tmp_path / "r.toml"
    path.write_bytes(b"name = '\xff\xfe'\n")
    with pytest.raises(UserError, match=f"--recipe {path} is not UTF-8 text"):
        load_recipe(path)


@pytest.mark.parametrize("bad", ["corpus", "eval_sts", "bench_sts"])
def test_bad_input_files_are_refused_before_the_first_stage(
    cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    binary = tmp_path / "binary.txt"
    binary.write_bytes(bytes(range(256)) * 16)
    scores = tmp_path / "scores.csv"
    scores.write_text("a dog,a cat,3\nthe man,a man,500\n")
    text = tiny_recipe(tiny_bert, data)
    if bad == "corpus":
        text = text.replace(f'"{data["corpus"]}"', f'"{binary}"')
    elif bad == "eval_sts":
        text = text.replace(f'eval_sts = "{data["sts"]}"', f'eval_sts = "{scores}"')
    else:
        text = text.replace(f'sts = "{data["sts"]}"\nseq_len = [32]', f'sts = "{scores}"\nseq_len = [32]')
    recipe = tmp_path / "r.toml"
    recipe.write_text(text)
    out = tmp_path / "out"
    assert cli(["pipeline", "--recipe", str(recipe), "--out", str(out), "--quiet"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and ("is not UTF-8 text" in errors[0] or ":2: score '500'" in errors[0]), errors
    assert not out.exists() and not (tmp_path / "out.work").exists()


def test_run_pipeline_api_checks_types_and_the_changed_recipe(tmp_path: Path) -> None:
    from edgebert.pipeline import run_pipeline

    recipe = parse_recipe("[distill]\nsteps = 3\n")
    with pytest.raises(UserError, match="--out must be a path"):
        run_pipeline(recipe, 123)  # type: ignore[arg-type]
    recipe.distill.lr = float("nan")
    with pytest.raises(UserError, match="distill.lr must be a finite number"):
        run_pipeline(recipe, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------- inputs, datasets, --dry-run


def test_presets_name_no_development_paths() -> None:
    from edgebert.pipeline.recipe import PRESETS_DIR

    for name in ("small", "tiny"):
        text = (PRESETS_DIR / f"{name}.toml").read_text()
        assert "../" not in text and "/shared" not in text, name
        recipe = load_preset(name)
        assert recipe.corpus is None and recipe.distill.eval_sts is None and recipe.bench.sts is None
        assert recipe.compress.calibration is None


def test_recipe_paths_are_relative_to_the_recipe_file(tmp_path: Path, data: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tiny_bert: Path) -> None:
    import shutil

    from edgebert.pipeline import load_recipe
    from edgebert.pipeline.run import plan_pipeline

    here = tmp_path / "recipes"
    shutil.copytree(data["dir"], here / "data")
    (here / "r.toml").write_text(f'teacher = "{tiny_bert}"\ncorpus = ["data/corpus.txt"]\n[distill]\neval_sts = "data/sts.csv"\n[bench]\nsts = "data/sts.csv"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    plan = plan_pipeline(load_recipe(here / "r.toml"), "out")
    assert [c.path for c in plan.corpus] == [here / "data" / "corpus.txt"]
    assert plan.eval_sts.path == plan.bench_sts.path == here / "data" / "sts.csv" and plan.skipped == []
    # flags replace the recipe's values, relative to the working directory
    (elsewhere / "other.csv").write_text(data["sts"].read_text())
    plan = plan_pipeline(load_recipe(here / "r.toml"), "out", sts="other.csv", sst2=str(data["sst"]))
    assert plan.bench_sts.path == elsewhere / "other.csv" and plan.recipe.bench.sts == str(elsewhere / "other.csv")
    assert [c.path for c in plan.corpus] == [here / "data" / "corpus.txt", data["sst"]]
    assert not (elsewhere / "out").exists() and not (elsewhere / "out.work").exists()


def test_skipped_steps_and_unevaluated_retention(tiny_bert: Path, data: dict[str, Path]) -> None:
    from edgebert.pipeline.run import evaluate_targets, skipped_steps

    recipe = parse_recipe(tiny_recipe(tiny_bert, data))
    assert skipped_steps(recipe) == []
    recipe.distill.eval_sts = recipe.bench.sts = None
    messages = [s["message"] for s in skipped_steps(recipe)]
    assert messages == [
        "no --eval-sts: distillation keeps the last checkpoint instead of the best on STS",
        "no --sts: bench reports size and latency without STS retention; the retention targets are not evaluated",
    ]
    report = {"items": [{"label": "student-onnx", "status": "ok", "model_bytes": 10**6, "derived": {}}]}
    verdicts = evaluate_targets(recipe, report, {("onnx", "none"): "student-onnx"}, 60.0)
    assert verdicts["min_sts_retention"]["met"] is None and verdicts["max_mb"]["met"] is True
    assert verdicts["all_met"] is False  # the ONNX speed-up has no teacher to compare with; retention does not count


def test_full_run_records_no_skipped_steps(full_run: dict[str, object]) -> None:
    assert json.loads((full_run["report"].out_dir / "pipeline.json").read_text())["skipped"] == []


@pytest.mark.parametrize(
    ("spec", "parts"),
    [
        ("glue/stsb:train", ("nyu-mll/glue", "stsb", "train")),
        ("glue/sst2:validation", ("nyu-mll/glue", "sst2", "validation")),
        ("hf:sentence-transformers/stsb:test", ("sentence-transformers/stsb", None, "test")),
        ("hf:org/name:cfg:train", ("org/name", "cfg", "train")),
    ],
)
def test_dataset_specs(spec: str, parts: tuple[str, str | None, str]) -> None:
    from edgebert.pipeline.inputs import is_dataset_spec, parse_dataset_spec

    parsed = parse_dataset_spec(spec, "--sts")
    assert is_dataset_spec(spec) and (parsed.name, parsed.config, parsed.split) == parts and "/" not in parsed.slug


@pytest.mark.parametrize("spec", ["glue/stsb", "hf:name", "hf:a:b:c:d", "glue/:train"])
def test_bad_dataset_specs_name_the_flag(spec: str) -> None:
    from edgebert.pipeline.inputs import parse_dataset_spec

    with pytest.raises(UserError, match=f"--sts {spec} is not a dataset spec"):
        parse_dataset_spec(spec, "--sts")


def test_dataset_conversions(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    from edgebert.data import load_sts_csv
    from edgebert.pipeline.inputs import (
        sentences_from_dataset,
        sts_csv_text,
        sts_rows_from_dataset,
    )

    columns = {"sentence1": ["a dog runs", "a man, singing", "unscored"], "sentence2": ["a dog walks", 'he sings "loud"', "x"]}
    stsb = datasets.Dataset.from_dict({**columns, "label": [3.8, 2.0, -1.0], "idx": [0, 1, 2]})
    rows = sts_rows_from_dataset(stsb, "glue/stsb:train")
    assert rows == [("a dog runs", "a dog walks", 3.8), ("a man, singing", 'he sings "loud"', 2.0)]  # GLUE test's -1 dropped
    (tmp_path / "sts.csv").write_text(sts_csv_text(rows))
    pairs = load_sts_csv(tmp_path / "sts.csv")
    assert pairs.sentences1 == ["a dog runs", "a man, singing"] and pairs.sentences2[1] == 'he sings "loud"' and pairs.scores == [3.8, 2.0]
    sst2 = datasets.Dataset.from_dict({"sentence": ["a  fine film ", "dull", "dull", " "], "label": [1, 0, 0, 1], "idx": [0, 1, 2, 3]})
    assert sentences_from_dataset(sst2, "glue/sst2:train") == ["a fine film", "dull"]
    assert sentences_from_dataset(stsb, "glue/stsb:train")[:2] == ["a dog runs", "a man, singing"]
    with pytest.raises(UserError, match="has no STS score column"):
        sts_rows_from_dataset(sst2.rename_column("sentence", "sentence1").add_column("sentence2", ["b"] * 4).remove_columns("label"), "x")


def test_dataset_inputs_are_written_into_the_work_dir(
    tiny_bert: Path, data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")
    import edgebert.data
    from edgebert.pipeline.run import plan_pipeline

    tables = {
        "stsb": datasets.Dataset.from_dict({"sentence1": ["a dog", "a cat", "a man"], "sentence2": ["the dog", "a cow", "men"], "label": [4.0, 1.0, 2.5]}),
        "sst2": datasets.Dataset.from_dict({"sentence": ["good film", "bad film"], "label": [1, 0]}),
    }
    loaded: list[tuple[str, str | None, str]] = []

    def fake_load(name: str, config: str | None, split: str, spec: str, hint: str) -> object:
        loaded.append((name, config, split))
        return tables[config]

    monkeypatch.setattr(edgebert.data, "load_hf_dataset", fake_load)
    recipe = parse_recipe(tiny_recipe(tiny_bert, data))
    plan = plan_pipeline(recipe, tmp_path / "out", eval_sts="glue/stsb:train", sst2="glue/sst2:train")
    assert loaded == [("nyu-mll/glue", "sst2", "train"), ("nyu-mll/glue", "stsb", "train")]
    assert not (tmp_path / "out.work").exists()
    assert plan.recipe.distill.eval_sts == "glue/stsb:train" and plan.recipe.corpus[-1] == "glue/sst2:train"
    written = plan.eval_sts.materialize(tmp_path / "d")
    assert written.name == "glue-stsb-train.csv" and len(edgebert.data.load_sts_csv(written)) == 3
    assert plan.corpus[-1].materialize(tmp_path / "d").read_text() == "good film\nbad film\n"


def test_dataset_corpus_sentences_are_filtered_like_tables(
    tiny_bert: Path, data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus dataset's sentences that choose checkpoints are not distilled on (as an STS csv's are not)."""
    datasets = pytest.importorskip("datasets")
    import edgebert.data
    from edgebert.pipeline.run import _prepare_data, _Run, plan_pipeline

    stsb = datasets.Dataset.from_dict({"sentence1": ["a dog runs", "a cat"], "sentence2": ["the dog", "a cow"], "label": [4.0, 1.0]})
    sst2 = datasets.Dataset.from_dict({"sentence": ["good film", "the  dog ", "a cat", "bad film"], "label": [1, 0, 1, 0]})
    monkeypatch.setattr(edgebert.data, "load_hf_dataset", lambda name, config, split, spec, hint: {"stsb": stsb, "sst2": sst2}[config])
    recipe = parse_recipe(tiny_recipe(tiny_bert, data).replace('eval_sts_limit = 12', 'eval_sts_limit = 2'))
    plan = plan_pipeline(recipe, tmp_path / "out", eval_sts="glue/stsb:train", sst2="glue/sst2:train")
    prepared = _prepare_data(_Run(plan, None, lambda message: None, False, True, None)).prepared  # type: ignore[arg-type]
    kept = prepared[-1]
    assert kept.parent == plan.work / "corpus" and kept.read_text() == "good film\nbad film\n"
    assert (plan.work / "corpus" / "glue-sst2-train.txt").read_text().count("\n") == 4  # the dataset as loaded


def test_unreachable_hub_fails_fast_with_one_line(cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    good = tmp_path / "good.toml"
    good.write_text(tiny_recipe(tiny_bert, data))
    started = time.perf_counter()
    assert cli(["pipeline", "--recipe", str(good), "--out", str(tmp_path / "out"), "--sts", "glue/stsb:validation", "--dry-run"]) == 2
    assert time.perf_counter() - started < 30
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and "could not load dataset 'glue/stsb:validation'" in errors[0] and "offline or unreachable" in errors[0], errors
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.toml"]


def test_dry_run_prints_the_plan_and_writes_nothing(
    cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = tmp_path / "good.toml"
    good.write_text(tiny_recipe(tiny_bert, data).replace("[vocab]", "") + "\n[vocab]\ntrim = true\n")
    before = sorted(tmp_path.rglob("*"))
    assert cli(["pipeline", "--recipe", str(good), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    plan = capsys.readouterr().out
    for stage in ("distill", "compress", "vocab", "export:teacher-onnx", "export:student-onnx ", "export:student-onnx-int8", "bench"):
        assert f". {stage}" in plan, stage
    assert str(data["corpus"]) in plan and str(tmp_path / "out.work") in plan and "skipped" not in plan
    assert sorted(tmp_path.rglob("*")) == before
    # a preset from outside the checkout, without the optional inputs: it says what it would skip
    monkeypatch.chdir(tmp_path)
    assert cli(["pipeline", "--preset", "tiny", "--teacher", str(tiny_bert), "--out", "o", "--corpus", str(data["corpus"]), "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "skipped: no --eval-sts" in plan and "skipped: no --sts" in plan and ". export:student-tfjs-uint8" in plan
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ([], "no corpus: pass --corpus FILE"),
        (["--corpus", "nope.txt"], "nope.txt does not exist"),
        (["--corpus", "CORPUS", "--eval-sts", "missing.csv"], "--eval-sts"),
        (["--corpus", "CORPUS", "--sts", "CORPUS"], "expected sentence1,sentence2,score"),
        (["--corpus", "CORPUS", "--sts", "hf:broken"], "--sts hf:broken is not a dataset spec"),
    ],
)
def test_dry_run_refuses_bad_input(
    cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    extra: list[str], needle: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    args = [str(data["corpus"]) if a == "CORPUS" else a for a in extra]
    assert cli(["pipeline", "--preset", "small", "--teacher", str(tiny_bert), "--out", "o", "--dry-run", *args]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and needle in errors[0], errors
    assert list(tmp_path.iterdir()) == []


@pytest.mark.integration
def test_wheel_runs_a_preset_outside_the_checkout() -> None:
    """benchmarks/suites/wheel_check.sh --run: wheel → fresh venv outside the checkout → `pipeline --preset tiny --dry-run`,
    then benchmarks/suites/wheel_short.toml end to end (every stage a few steps, three targets) with its data passed by flags
    (~3 min on an idle 2-core machine)."""
    import shutil
    import subprocess
    import sys

    if not (shutil.which("git") and shutil.which("unzip") and shutil.which("npm")):
        pytest.skip("needs git, unzip and npm")
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "suites" / "wheel_check.sh"
    venv = Path(sys.executable).parents[1]
    done = subprocess.run([str(script), "--run", str(venv)], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "OK: the wheel's tiny preset plans" in done.stdout
    assert "OK: the wheel ran benchmarks/suites/wheel_short.toml end to end" in done.stdout


def test_run_without_sts_inputs_skips_and_records_it(
    cli, tmp_path: Path, tiny_bert: Path, data: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    text = tiny_recipe(tiny_bert, data, compress=False).replace(f'eval_sts = "{data["sts"]}"\n', "")
    text = text.replace(f'sts = "{data["sts"]}"\nseq_len = [32]', "seq_len = [32]").replace('onnx = ["none", "int8"]', 'onnx = ["int8"]')
    recipe = tmp_path / "r.toml"
    recipe.write_text(text)
    out = tmp_path / "out"
    assert cli(["pipeline", "--recipe", str(recipe), "--out", str(out), "--cache-dir", str(tmp_path / "cache")]) == 0
    captured = capsys.readouterr()
    assert "[pipeline] no --eval-sts: distillation keeps the last checkpoint" in captured.err
    assert "target min_sts_retention ≥ -100: not evaluated (no --sts)" in captured.out and "skipped: no --sts" in captured.out
    summary = json.loads((out / "pipeline.json").read_text())
    assert [s["input"] for s in summary["skipped"]] == ["--eval-sts", "--sts"]
    assert summary["targets"]["min_sts_retention"]["met"] is None and summary["targets"]["max_mb"]["met"] is True
