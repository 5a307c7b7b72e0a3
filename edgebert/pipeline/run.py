"""`run_pipeline(...)`: distill → compress → (heal, vocab, redistill) → finetune → export (every target × quantization) → bench → report, resumable.

Every stage writes into `<work>/<stage>/...` through the verbs' own APIs (so each output is complete once its
`edgebert.json` / `report.json` exists) and is recorded in `<work>/pipeline-state.json` with its wall time. With
`resume=True` a finished stage (marker present) is skipped and an unfinished distillation continues from its last
checkpoint. The final report (bench's report.md/json/png + pipeline.json with stages, times and target verdicts)
is moved into `out` in one step.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgebert import __version__
from edgebert.artifact import atomic_output_dir, check_output_dir, report_json
from edgebert.config import HELD_OUT_SHARE, BenchConfig, BenchRecipe, PipelineConfig
from edgebert.errors import UserError, VerificationError, kept_on_interrupt
from edgebert.pipeline.verdicts import SECOND_TEACHER_LABEL, TEACHER_LABEL, evaluate_targets, headline
from edgebert.heads import FEATURE_EXTRACTION, TEXT_CLASSIFICATION
from edgebert.modeldir import MANIFEST, read_manifest
from edgebert.options import checked, keyword_options
from edgebert.pipeline.inputs import Input, is_dataset_spec, resolve_input
from edgebert.pipeline.recipe import ExportSection, FinetuneSection, Recipe, resolve_path, validate_recipe

STATE_FILE = "pipeline-state.json"
AUGMENTED_FILE = "augmented.txt"  # <work>/corpus/: [distill] augment's variants
SCHEMA = "edgebert.pipeline/1"
REPORT_FILES = ("report.json", "report.md", "report.png")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _stderr(message: str) -> None:
    sys.stderr.write(f"[pipeline] {message}\n")
    sys.stderr.flush()


@dataclass
class PipelineReport:
    out_dir: Path
    work_dir: Path
    summary: dict[str, Any]

    @property
    def targets_met(self) -> bool | None:
        return self.summary["targets"]["all_met"]


# ------------------------------------------------------------------------------------------------- state


class State:
    """`<work>/pipeline-state.json`: the recipe fingerprint and one entry per stage (status, times, output)."""

    def __init__(self, work: Path, data: dict[str, Any]) -> None:
        self.path = work / STATE_FILE
        self.data = data

    @classmethod
    def load(cls, work: Path) -> State | None:
        path = work / STATE_FILE
        if not path.exists():
            return None
        try:
            return cls(work, json.loads(path.read_text()))
        except json.JSONDecodeError as exc:
            raise UserError(f"{path} is not valid JSON ({exc.msg}); delete the work dir or pass --force") from exc

    def save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(report_json(self.data))
        os.replace(tmp, self.path)

    @property
    def stages(self) -> dict[str, Any]:
        return self.data.setdefault("stages", {})

    def entry(self, name: str) -> dict[str, Any] | None:
        return self.stages.get(name)

    def record(self, name: str, **fields: Any) -> None:
        self.stages.setdefault(name, {}).update(fields)
        self.save()


def _marker(path: Path) -> Path:
    """The file whose existence says a stage output is complete."""
    return path / ("report.json" if path.name == "bench" else MANIFEST)


def _run_stage(state: State, name: str, out: Path, fn: Callable[[], Any], log: Callable[[str], None], resume: bool) -> bool:
    """Run `fn` unless `out` is already complete; record status and wall time. True when it ran."""
    entry = state.entry(name) or {}
    if _marker(out).exists() and (resume or entry.get("status") == "done"):
        if entry.get("status") != "done":  # finished, but the state was not written (killed in between)
            state.record(name, status="done", out=str(out), wall_s=entry.get("wall_s"), recovered=True)
        log(f"{name}: done already ({out}), skipped")
        state.record(name, skipped_in_last_run=True)
        return False
    log(f"{name}: running → {out}")
    started = time.perf_counter()
    attempts = int(entry.get("attempts", 0)) + 1
    state.record(name, status="running", out=str(out), started=_now(), attempts=attempts, skipped_in_last_run=False)
    try:
        fn()
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        state.record(name, status=status, error=f"{type(exc).__name__}: {exc}", failed_after_s=round(time.perf_counter() - started, 2))
        raise
    wall = round(time.perf_counter() - started, 2)
    state.record(name, status="done", finished=_now(), wall_s=wall, error=None)
    log(f"{name}: done in {wall:.1f} s")
    return True


# -------------------------------------------------------------------------------------------- stage bodies
# Module-level so tests can replace one (e.g. make an export raise to simulate an interruption).


def run_distill(
    teacher: str, corpus: list[Path], out: Path, recipe: Recipe, eval_sts: Path | None, resume: bool, cache_dir: Any, quiet: bool,
    eval_labels: Path | None = None, teacher_cache: Path | None = None,
) -> None:  # fmt: skip
    _distill(teacher, corpus, out, recipe.distill.kwargs(), eval_sts, eval_labels, teacher_cache, resume, cache_dir, quiet)


def _distill(
    teacher: str, corpus: list[Path], out: Path, kwargs: dict[str, Any], eval_sts: Path | None, eval_labels: Path | None,
    teacher_cache: Path | None, resume: bool, cache_dir: Any, quiet: bool,
) -> None:  # fmt: skip
    """`distill()` with the run's data, teacher cache and flags beside the recipe's keyword arguments."""
    from edgebert.distill import distill

    def text(path: Path | None) -> str | None:
        return str(path) if path else None

    distill(teacher, [str(c) for c in corpus], out, **kwargs, eval_sts=text(eval_sts), eval_labels=text(eval_labels),
            teacher_cache=text(teacher_cache), resume=resume, cache_dir=cache_dir, quiet=quiet)  # fmt: skip


def run_heal_from_teacher(
    teacher: str, corpus: list[Path], pruned: Path, out: Path, recipe: Recipe, eval_sts: Path | None, resume: bool,
    cache_dir: Any, quiet: bool, eval_labels: Path | None = None, teacher_cache: Path | None = None,
) -> None:  # fmt: skip
    """`[compress] heal_from = "teacher"`: the teacher distilled into the pruned student with the [distill] recipe
    (losses, layer map, batch, text, teacher cache), for heal_steps at heal_lr on heal_seq_len tokens; checkpoints
    every ~10 % of the steps, the best on `eval_sts` kept (the pruned student competes): `Recipe.heal_kwargs`."""
    _distill(teacher, corpus, out, recipe.heal_kwargs(pruned), eval_sts, eval_labels, teacher_cache, resume, cache_dir, quiet)


def run_compress(model: Path, out: Path, recipe: Recipe, calibration: Path, corpus: list[Path], quiet: bool) -> None:
    from edgebert.compress.compress import compress
    from edgebert.compress.heal import HealConfig

    c = recipe.compress
    in_compress = c.heal_steps and not c.heals_from_teacher  # from the teacher: a stage of its own
    heal = HealConfig(steps=c.heal_steps, corpus=[str(p) for p in corpus], lr=c.heal_lr, seq_len=c.heal_seq_len) if in_compress else None
    compress(
        model,
        out,
        prune_heads=c.prune_heads,
        prune_ffn=c.prune_ffn,
        head_scope=c.head_scope,
        ffn_scope=c.ffn_scope,
        calibration=calibration,
        calibration_samples=c.calibration_samples,
        importance=c.importance,
        seq_len=c.seq_len,
        batch_size=c.batch_size,
        seed=c.seed,
        heal=heal,
        quiet=quiet,
    )


def run_trim_vocab(model: Path, out: Path, recipe: Recipe, corpus: list[Path], quiet: bool) -> None:
    """The recipe's corpus vocabulary only; [UNK] rate and fidelity measured on a held-out corpus slice (the
    bench's STS-B dev stays unseen)."""
    from edgebert.compress.vocab import trim_vocab

    v = recipe.vocab
    trim_vocab(model, out, [str(p) for p in corpus], min_count=v.min_count, max_size=v.max_size, quiet=quiet)


def run_redistill(
    teacher: Path, corpus: list[Path], student: Path, out: Path, recipe: Recipe, eval_sts: Path | None, resume: bool,
    cache_dir: Any, quiet: bool,
) -> None:  # fmt: skip
    """[redistill]: the second teacher's sentence embeddings distilled into `student` across tokenizers, on the run's
    corpus, the checkpoint best on `eval_sts` kept (the student as it came competes)."""
    kwargs = recipe.redistill.kwargs(student, recipe.distill.sentences)
    _distill(str(teacher), corpus, out, kwargs, eval_sts, None, None, resume, cache_dir, quiet)


def run_finetune(model: Path, data: Path, out: Path, recipe: Recipe, quiet: bool, eval_sts: Path | None = None) -> None:
    """The recipe's [finetune] on the final student: its labelled pairs `data`, the epoch or soup best on held-out rows
    (`eval_sts`: the run's checkpoint pairs, when the recipe chooses on them)."""
    from edgebert.finetune import finetune

    finetune(model, data, out, **recipe.finetune.kwargs(recipe.base_dir, eval_sts), quiet=quiet)


def run_export(
    target: str, quantize: str, model: Path | str, out: Path, e: ExportSection, quiet: bool, calibration: Path | None = None,
) -> None:
    """One export with the recipe's [export] options; `calibration`: the activation-range text of an int8-static
    recipe (None for the others)."""
    from edgebert.export import export

    export(target, model=model, out=out, quantize=quantize, seq_len=e.seq_len, buckets=e.buckets, min_cosine=e.min_cosine,
           quiet=quiet, calibration=calibration)  # fmt: skip


def run_bench_stage(
    items: list[str], recipe: Recipe, sts: Path | None, out: Path, log: Callable[[str], None], labels: Path | None = None
) -> dict[str, Any]:
    from edgebert.bench.harness import plan_bench, run_bench

    b = recipe.bench
    options = BenchConfig(**{f.name: getattr(b, f.name) for f in dataclasses.fields(BenchRecipe)})
    options.sts, options.reference = (str(sts) if sts else None), TEACHER_LABEL
    options.sst2 = str(labels) if labels else None
    config = plan_bench(items, options, command=["edgebert", "pipeline", "(bench stage)"])
    outcome = run_bench(config, out, force=True, echo=lambda m: log(f"bench: {m}"))
    if outcome.interrupted:
        raise KeyboardInterrupt
    return outcome.report


# ----------------------------------------------------------------------------------------------- verdicts


def _with_flags(recipe: Recipe, options: PipelineConfig) -> Recipe:
    """A copy of `recipe` with the command line's inputs and overrides in place of its own (local paths made absolute
    against the working directory, dataset specs kept), so the fingerprint and pipeline.json show what the run used."""
    from edgebert import validate

    def absolute(flag: str, value: str) -> str:
        validate.path_like(flag, value, optional=False)
        value = str(value)
        return value if is_dataset_spec(value) else str(Path(value).expanduser().absolute())

    o, recipe = options, copy.deepcopy(recipe)
    if o.steps is not None:
        recipe.distill.steps = validate.integer("--steps", o.steps, 1)
    if o.teacher is not None:
        validate.path_like("--teacher", o.teacher, optional=False)
        recipe.teacher = str(o.teacher)
    if o.redistill_teacher is not None:
        validate.path_like("--redistill-teacher", o.redistill_teacher, optional=False)
        recipe.redistill.teacher = str(o.redistill_teacher)
    if o.corpus:
        recipe.corpus = [absolute("--corpus", c) for c in o.corpus]
    if o.sst2 is not None:
        recipe.corpus = [*(recipe.corpus or []), absolute("--sst2", o.sst2)]
    if o.eval_sts is not None:
        recipe.distill.eval_sts = absolute("--eval-sts", o.eval_sts)
    if o.eval_labels is not None:
        recipe.distill.eval_labels = absolute("--eval-labels", o.eval_labels)
    if o.labels is not None:
        recipe.bench.sst2 = absolute("--labels", o.labels)
    if o.sts is not None:
        recipe.bench.sts = absolute("--sts", o.sts)
    if o.finetune_data is not None:
        recipe.finetune.data = absolute("--finetune-data", o.finetune_data)
    return recipe


def _resolve_corpus(recipe: Recipe) -> list[Input]:
    """The corpus inputs (recipe paths relative to its file; flags already absolute); none at all is a UserError."""
    if not recipe.corpus:
        raise UserError(
            "no corpus: pass --corpus FILE... (text files, .gz ok, dirs, an STS-B csv, an SST-2 tsv or a dataset spec "
            "such as glue/sst2:train) or name `corpus` in the recipe"
        )
    return [resolve_input("corpus", c, recipe.base_dir, "text") for c in recipe.corpus]


def _resolve_teacher(spec: str, base: Path) -> str:
    """The recipe's teacher: a directory relative to the recipe file when it exists there, else as given (hub id,
    `default`, absolute path)."""
    if spec == "default" or Path(spec).expanduser().is_absolute():
        return spec
    candidate = resolve_path(spec, base)
    return str(candidate) if candidate.exists() else spec


def skipped_steps(recipe: Recipe, classifier: bool = False, sentence_sets: bool = True) -> list[dict[str, str]]:
    """What the run leaves out for want of an optional input: one entry (step, input, message) each (`classifier`:
    the teacher is a sequence classifier, whose data are labelled sentences rather than STS pairs; `sentence_sets`:
    the corpus holds labelled-set sentences, which `[distill] augment` rewrites)."""
    d, b, t = recipe.distill, recipe.bench, recipe.targets
    augment = [] if sentence_sets or not d.augment else [{
        "step": "distill", "input": "--corpus (an STS csv, an SST tsv or a dataset spec)",
        "message": "no labelled-set sentences in the corpus (STS csv, SST tsv, dataset spec): [distill] augment adds no variants",
    }]  # fmt: skip
    if classifier:
        checks = [
            ("distill", "--eval-labels", d.eval_labels, "no --eval-labels: distillation keeps the last checkpoint instead of the best on accuracy"),
            ("bench", "--labels", b.sst2, "no labelled bench set (--labels or [bench] sst2): bench reports size and latency without accuracy"
             + ("; the accuracy targets are not evaluated" if t.min_accuracy_retention is not None else "")),
        ]  # fmt: skip
    else:
        checks = [
            ("distill", "--eval-sts", d.eval_sts, "no --eval-sts: distillation keeps the last checkpoint instead of the best on STS"),
            ("bench", "--sts", b.sts, "no --sts: bench reports size and latency without STS retention"
             + ("; the retention targets are not evaluated" if t.min_sts_retention is not None else "")),
            ("finetune", "--finetune-data", recipe.finetune.data or recipe.finetune == FinetuneSection(),
             "no --finetune-data (or [finetune] data): the recipe's finetune stage does not run"),
        ]  # fmt: skip
    return augment + [{"step": step, "input": flag, "message": message} for step, flag, given, message in checks if not given]


def teacher_task(teacher_dir: Path) -> str:
    """The task of the teacher's head (edgebert.heads.detect_task on its config.json)."""
    from edgebert.heads import detect_task, read_sentence_stack
    from edgebert.modelio import inspect_model_dir

    config, _ = inspect_model_dir(teacher_dir)
    return detect_task(config, read_sentence_stack(teacher_dir) is not None)


def _check_task_inputs(recipe: Recipe, classifier: bool) -> None:
    """The data fit the teacher: labelled sets and accuracy targets for a classifier, STS for an embedder."""
    if classifier and recipe.distill.eval_sts:
        raise UserError("the teacher is a sequence classifier: its student is chosen on labelled sentences (--eval-labels), not --eval-sts")
    if classifier and recipe.targets.min_sts_retention is not None:
        raise UserError("the teacher is a sequence classifier: set targets.min_accuracy_retention, not min_sts_retention")
    if not classifier and (recipe.distill.eval_labels or recipe.targets.min_accuracy_retention is not None):
        raise UserError("--eval-labels and targets.min_accuracy_retention need a sequence-classifier teacher")
    if classifier and recipe.finetune.data:
        raise UserError("the teacher is a sequence classifier: the finetune stage (--finetune-data, [finetune] data) trains sentence embedders")
    if classifier and recipe.redistill.enabled:
        raise UserError("the teacher is a sequence classifier: [redistill] (--redistill-teacher) distils sentence embedders")
    if recipe.finetune.held_out_eval_sts and recipe.finetune.data and not recipe.distill.eval_sts:
        raise UserError("[finetune] held_out_eval_sts chooses on the --eval-sts pairs: pass --eval-sts")


def _check_teacher(teacher_dir: Path, classifier: bool, labelled: list[Input | None]) -> None:
    """The teacher's weights load as the distill stage loads them (a config that names layers its weights lack is
    found now, not after the corpus is prepared), and every labelled set's labels are the classifier's."""
    from edgebert.data import label_ids, load_labelled_tsv
    from edgebert.modelio import inspect_model_dir

    config, family = inspect_model_dir(teacher_dir)
    if classifier:
        from edgebert.distill.task import load_teacher_classifier

        load_teacher_classifier(teacher_dir, family)
        for labels in labelled:  # local files (a dataset's labels were checked when it was converted)
            if labels is not None and labels.path is not None:
                rows = load_labelled_tsv(labels.path, flag=labels.flag)
                label_ids(sorted(set(rows.labels)), config.get("id2label"), f"{labels.flag} {labels.path}")
    else:
        from edgebert.distill.teacher import load_teacher_mlm

        load_teacher_mlm(teacher_dir, family)


def _check_work(work: Path, recipe: Recipe, resume: bool, force: bool) -> str:
    """What `_prepare_work` will do with `work` (read only): 'new', 'resume' or 'start over'; UserError when neither
    fits (a foreign non-empty dir, a previous run without --resume/--force, a resume of a different recipe)."""
    if work.exists() and not work.is_dir():
        raise UserError(f"--work {work} is a file, not a directory; choose another path")
    state = State.load(work) if work.is_dir() else None
    if work.is_dir() and any(work.iterdir()) and state is None:
        raise UserError(f"--work {work} is not empty and holds no pipeline run; choose another path")
    if state is None:
        return "new"
    if resume:
        if state.data.get("recipe_fingerprint") != recipe.fingerprint():
            raise UserError(
                f"--resume: the recipe differs from the run in {work} (see {work / STATE_FILE}); "
                "pass the same preset/recipe, inputs and --steps, or --force to start over"
            )
        return "resume"
    if not force:
        raise UserError(f"--work {work} holds a previous pipeline run; pass --resume to continue it or --force to start over")
    return "start over"


def _prepare_work(work: Path, recipe: Recipe, resume: bool, force: bool) -> State:
    action = _check_work(work, recipe, resume, force)
    if action == "resume":
        state = State.load(work)
        assert state is not None
        return state
    if action == "start over":
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    state = State(work, {"schema": SCHEMA, "recipe_fingerprint": recipe.fingerprint(), "recipe": recipe.as_dict(), "created": _now()})
    state.save()
    return state


def _check_inputs(
    corpus: list[Input], eval_sts: Input | None, bench_sts: Input | None, calibration: Path | None, labelled: list[Input | None]
) -> None:
    """Every local input file is readable UTF-8 text, STS files hold valid scores, labelled sets have labelled rows:
    found now, not when their stage runs (datasets were checked when converted)."""
    from edgebert import validate
    from edgebert.data import check_corpus_sources, load_labelled_tsv, load_sts_csv

    check_corpus_sources([c.path for c in corpus if c.path is not None])
    for sts in (eval_sts, bench_sts):
        if sts is not None and sts.path is not None:
            load_sts_csv(sts.path)
    for labels in labelled:
        if labels is not None and labels.path is not None:
            load_labelled_tsv(labels.path, limit=1, flag=labels.flag)
    if calibration is not None:
        validate.text_file("compress.calibration", calibration)


def _check_finetune_data(data: Input | None, recipe: Recipe) -> None:
    """The finetune stage's rows read as the stage will read them (a dataset converted in a scratch directory): a bad
    row, a missing column or too few held-out rows is found now, not after distillation."""
    import tempfile

    from edgebert.finetune.api import check_installed, training_data

    if data is None:
        return
    from edgebert.pipeline.corpus import write_sts_subset

    check_installed()
    eval_sts = Path(recipe.distill.eval_sts) if recipe.finetune.held_out_eval_sts and recipe.distill.eval_sts else None
    with tempfile.TemporaryDirectory() as scratch:
        held = None  # the run's checkpoint pairs, as _prepare_data will write them (a dataset's: checked when converted)
        if eval_sts is not None and eval_sts.is_file():
            held = write_sts_subset(eval_sts, recipe.distill.eval_sts_limit, Path(scratch) / "eval-sts.csv")
        options = replace(recipe.finetune, **recipe.finetune.kwargs(recipe.base_dir, held))
        training_data(data.materialize(Path(scratch)), options, flag=data.flag)


def _check_targets(recipe: Recipe) -> None:
    """Every export target's toolchain is installed: found before distillation runs for minutes, not after it."""
    from edgebert.targets import get_exporter

    for target in sorted({t for t, _ in recipe.export.student_exports()} | set(recipe.export.teacher_targets)):
        get_exporter(target).check_available()


@dataclass
class Plan:
    """A checked run: the effective recipe, resolved inputs, where it writes, what it skips; nothing written yet."""

    recipe: Recipe
    out: Path
    work: Path
    work_action: str
    teacher: str
    teacher_dir: Path
    corpus: list[Input]
    eval_sts: Input | None
    bench_sts: Input | None
    calibration: Path | None
    skipped: list[dict[str, str]]
    inputs: dict[str, Any]
    task: str = FEATURE_EXTRACTION  # the teacher's: text-classification means task distillation
    eval_labels: Input | None = None
    bench_labels: Input | None = None
    export_calibration: Path | None = None  # int8-static exports' text (None: sampled from the corpus)
    finetune: Input | None = None  # the finetune stage's labelled pairs (None: no such stage)
    replace_out: bool = False  # --force, or --resume over this same run's own report
    redistill_teacher: Path | None = None  # [redistill]'s teacher directory (None: no such stage)

    @property
    def classifier(self) -> bool:
        return self.task == TEXT_CLASSIFICATION


def plan_pipeline(recipe: Recipe, out: str | Path, config: PipelineConfig | None = None, **options: Any) -> Plan:
    """Every up-front check of a run (recipe, inputs, datasets, teacher, --out/--work) without writing anything."""
    from edgebert import validate

    o = config or PipelineConfig(**checked(PipelineConfig, options, "plan_pipeline"))
    work, resume, force = o.work, o.resume, o.force
    validate_recipe(recipe)  # again: the caller may have changed it since it was loaded
    validate.path_like("--out", out, optional=False)
    validate.path_like("--work", work)
    validate.path_like("--cache-dir", o.cache_dir)
    recipe = _with_flags(recipe, o)
    out = Path(out).expanduser().absolute()
    work = Path(work).expanduser().absolute() if work else out.with_name(out.name + ".work")
    if work == out or out in work.parents:
        raise UserError(f"--work {work} must not be --out or inside it; --out receives only the final report")
    replace_out = force or (resume and _own_report(out, work))
    check_output_dir(out, replace_out)  # before resolving the teacher (it may be downloaded)
    corpus_inputs = _resolve_corpus(recipe)
    base = recipe.base_dir
    eval_input = resolve_input("--eval-sts", recipe.distill.eval_sts, base, "sts") if recipe.distill.eval_sts else None
    bench_input = resolve_input("--sts", recipe.bench.sts, base, "sts") if recipe.bench.sts else None
    calibration = resolve_path(recipe.compress.calibration, base) if recipe.compress.calibration else None
    if calibration is not None and not calibration.is_file():
        raise UserError(f"compress.calibration {calibration} does not exist")
    export_calibration = resolve_path(recipe.export.calibration, base) if recipe.export.calibration else None
    if export_calibration is not None:
        validate.text_file("export.calibration", export_calibration)
    eval_labels = resolve_input("--eval-labels", recipe.distill.eval_labels, base, "labelled") if recipe.distill.eval_labels else None
    bench_labels = resolve_input("[bench] sst2", recipe.bench.sst2, base, "labelled") if recipe.bench.sst2 else None
    _check_inputs(corpus_inputs, eval_input, bench_input, calibration, [eval_labels, bench_labels])
    finetune = resolve_input("--finetune-data", recipe.finetune.data, base, "rows") if recipe.finetune.data else None
    _check_finetune_data(finetune, recipe)
    _check_targets(recipe)
    teacher = _resolve_teacher(recipe.teacher, base)
    from edgebert.sources import resolve_model

    teacher_dir = resolve_model(teacher)
    task = teacher_task(teacher_dir)
    _check_task_inputs(recipe, task == TEXT_CLASSIFICATION)
    _check_teacher(teacher_dir, task == TEXT_CLASSIFICATION, [eval_labels, bench_labels])
    redistill_teacher = _redistill_teacher(recipe)
    inputs = {
        "teacher": teacher_dir,
        "corpus": [c.path for c in corpus_inputs if c.path is not None],
        "--eval-sts": eval_input.path if eval_input else None,
        "--sts": bench_input.path if bench_input else None,
        "--eval-labels": eval_labels.path if eval_labels else None,
        "[bench] sst2": bench_labels.path if bench_labels else None,
        "compress.calibration": calibration,
        "export.calibration": export_calibration,
        "--finetune-data": finetune.path if finetune else None,
        "finetune.held_out_file": recipe.finetune.kwargs(base).get("held_out_file"),
        "[redistill] teacher": redistill_teacher,
        "recipe": recipe.source,
    }
    check_output_dir(out, replace_out, inputs)
    check_output_dir(work, True, inputs, "--work")  # overlap and writability; its contents are _check_work's
    work_action = _check_work(work, recipe, resume, force)
    return Plan(recipe, out, work, work_action, teacher, teacher_dir, corpus_inputs, eval_input, bench_input, calibration,
                skipped_steps(recipe, task == TEXT_CLASSIFICATION, any(_is_sentence_set(c) for c in corpus_inputs)), inputs, task, eval_labels, bench_labels, export_calibration, finetune, replace_out, redistill_teacher)  # fmt: skip


def _redistill_teacher(recipe: Recipe) -> Path | None:
    """[redistill]'s teacher resolved (downloaded when a hub id) and checked to be a sentence embedder; None when the
    recipe has no such stage."""
    from edgebert.distill.across import check_teacher_is_embedder
    from edgebert.modelio import inspect_model_dir
    from edgebert.sources import resolve_model

    if not recipe.redistill.enabled:
        return None
    teacher = resolve_model(_resolve_teacher(str(recipe.redistill.teacher), recipe.base_dir))
    inspect_model_dir(teacher)[1].require("distill")
    check_teacher_is_embedder(teacher)
    return teacher


def _own_report(out: Path, work: Path) -> bool:
    """Whether `out` holds only the report of the run in `work` (what `--resume` may rewrite; whether the recipe
    may resume that run is `_check_work`'s question)."""
    summary = out / "pipeline.json"
    try:
        data = json.loads(summary.read_text())
    except (OSError, ValueError):
        return False
    return data.get("work_dir") == str(work) and {p.name for p in out.iterdir()} <= {*REPORT_FILES, "pipeline.json", "recipe.toml"}


def planned_stages(plan: Plan) -> list[tuple[str, Path, str]]:
    """(stage, output dir, key settings) in run order, as `run_pipeline` runs them."""
    r, w = plan.recipe, plan.work
    d, c, v, e, b = r.distill, r.compress, r.vocab, r.export, r.bench
    layers = f"{d.student_layers} layers" if d.student_layers else "student shape from distill()'s defaults"
    if d.layer_groups:
        layers += f" sharing {d.layer_groups} layer module(s)"
    best = f"best on --eval-sts every {d.eval_steps or 'default'} steps" if d.eval_sts else "last checkpoint"
    mode = ""
    if plan.classifier:
        best = f"best accuracy on --eval-labels every {d.eval_steps or 'default'} steps" if d.eval_labels else "last checkpoint"
        mode = "task distillation of the classifier teacher (soft targets on its logits + hidden cosine) into a classifier, "
    stages = [("distill", w / "distill" / "student",
               f"{mode}{layers}, embedding_dim {d.embedding_dim}, {d.steps} steps, batch {d.batch_size}, seq {d.seq_len}, lr {d.lr:g}; keeps the {best}")]  # fmt: skip
    if d.augment:
        stages[0] = (*stages[0][:2], f"{stages[0][2]}; corpus plus {d.augment} word-replacement variant(s) of each labelled-set sentence (p {d.augment_p:g}, {d.augment_k} neighbours)")
    cache = d.teacher_cache_dir(r.base_dir, w)
    if cache:
        stages[0] = (*stages[0][:2], f"{stages[0][2]}; teacher outputs cached in {cache}")
    if c.enabled:
        heal = f", heal {c.heal_steps} steps from the unpruned student (lr {c.heal_lr:g})" if c.heal_steps and not c.heals_from_teacher else ""
        stages.append(("compress", w / "compress" / "student",
                       f"prune heads {c.prune_heads:g} ({c.head_scope}), FFN {c.prune_ffn:g} ({c.ffn_scope}), {c.calibration_samples} calibration passages{heal}"))  # fmt: skip
    if c.heals_from_teacher:
        heal_best = "best on --eval-sts every ~10 % of the steps (the pruned student competes)" if d.eval_sts else "last checkpoint"
        stages.append(("heal", w / "heal" / "student",
                       f"distil the teacher into the pruned student, {c.heal_steps} steps, batch {d.batch_size}, seq {c.heal_seq_len or d.seq_len}, lr {c.heal_lr:g}"
                       f"{f', on the {c.heal_weight_grid} weight grid' if c.heal_weight_grid else ''}; keeps the {heal_best}"))  # fmt: skip
    if v.trim:
        stages.append(("vocab", w / "vocab" / "student", f"trim to the corpus vocabulary, min count {v.min_count}, max size {v.max_size}"))
    if plan.redistill_teacher is not None:
        rd = r.redistill
        rd_best = f"best on --eval-sts every {rd.eval_steps or 'default'} steps (the student as it came competes)" if d.eval_sts else "last checkpoint"
        stages.append(("redistill", w / "redistill" / "student",
                       f"distil {plan.redistill_teacher}'s sentence embeddings into the student across tokenizers (pooled "
                       f"{rd.alpha_pooled if rd.alpha_pooled is not None else 'default'}, similarity {rd.alpha_sim:g}), {rd.steps} steps, "
                       f"batch {rd.batch_size}, seq {rd.seq_len}, lr {rd.lr:g}; keeps the {rd_best}"))  # fmt: skip
    if plan.finetune is not None:
        stages.append(("finetune", w / "finetune" / "student", _finetune_settings(r.finetune)))
    for target in e.teacher_targets:
        stages.append((f"export:teacher-{target}", w / "export" / f"teacher-{target}", f"teacher fp32, seq {e.seq_len}"))
    for target, quant in e.student_exports():
        name = f"student-{target}" + ("" if quant == "none" else f"-{quant}")
        stages.append((f"export:{name}", w / "export" / name, f"quantize {quant}, seq {e.seq_len}, min cosine {e.min_cosine}"))
    sts = f"STS {plan.bench_sts.describe()}" if plan.bench_sts else "no STS"
    if plan.classifier:
        sts = f"accuracy and agreement on {plan.bench_labels.describe()}" if plan.bench_labels else "no labelled set"
    stages.append(("bench", w / "bench", f"seq {b.seq_len}, batch {b.batch}, threads {b.threads}, {b.repeats} repeats, {sts}"))
    return stages


def _finetune_settings(f: FinetuneSection) -> str:
    """The dry run's line for the finetune stage: its training and what it keeps."""
    if f.held_out == 0:
        keeps = f"epoch {f.epochs}" if f.soup_from is None else f"the soup of epochs {f.soup_from}-{f.epochs}"
    elif f.held_out_eval_sts:
        keeps = "the epoch or soup best on the --eval-sts pairs"
    elif f.held_out_file:
        keeps = f"the epoch or soup best on the rows of {f.held_out_file}"
    else:
        keeps = f"the epoch or soup best on {HELD_OUT_SHARE if f.held_out is None else f.held_out:g} of the rows, held out"
    seeds = ",".join(map(str, f.seeds))
    refit = "; then refitted on every row for the epochs chosen" if f.refit and f.held_out != 0 else ""
    return f"loss {f.loss}, {f.epochs} epochs, batch {f.batch_size}, lr {f.lr:g}, seeds {seeds}; keeps {keeps}{refit}"


def format_plan(plan: Plan) -> list[str]:
    """The dry run's printout: recipe, inputs, stages in order with their settings, skipped steps, outputs, targets."""
    r = plan.recipe
    lines = [f"plan: recipe {r.name} ({r.fingerprint()}) from {r.source or 'the API'}; nothing written (dry run)",
             f"teacher: {plan.teacher_dir}", "inputs:"]  # fmt: skip
    lines += [f"  corpus: {c.describe()}" for c in plan.corpus]
    limit = f" ({r.distill.eval_sts_limit} pairs spread over the file)" if r.distill.eval_sts_limit else ""
    lines.append(f"  --eval-sts: {plan.eval_sts.describe() + limit if plan.eval_sts else 'none'}")
    lines.append(f"  --sts: {plan.bench_sts.describe() if plan.bench_sts else 'none'}")
    if plan.classifier:
        lines[1] += f" ({plan.task}: task distillation)"
        lines.append(f"  --eval-labels: {plan.eval_labels.describe() if plan.eval_labels else 'none'}")
        lines.append(f"  --labels ([bench] sst2): {plan.bench_labels.describe() if plan.bench_labels else 'none'}")
    if r.compress.enabled:
        lines.append(f"  calibration: {plan.calibration or 'passages sampled from the corpus into the work dir'}")
    if plan.finetune is not None:
        lines.append(f"  --finetune-data: {plan.finetune.describe()}")
    lines.append(f"stages ({plan.work_action} work dir {plan.work}):")
    lines += [f"  {i}. {name} → {out}: {settings}" for i, (name, out, settings) in enumerate(planned_stages(plan), 1)]
    lines += [f"skipped: {s['message']}" for s in plan.skipped]
    lines.append(f"outputs: {plan.out} (report.md/json/png, pipeline.json, recipe.toml); stage outputs in {plan.work}")
    t = [f"{f.name} {getattr(r.targets, f.name):g}" for f in dataclasses.fields(r.targets) if getattr(r.targets, f.name) is not None]
    lines.append(f"targets: {', '.join(t) or 'none'}")
    return lines


@keyword_options(PipelineConfig)
def run_pipeline(
    recipe: Recipe, out: str | Path, config: PipelineConfig | None = None, *, log: Callable[[str], None] | None = None, **options: Any
) -> PipelineReport:
    """Run the whole recipe; the input flags (corpus, eval_sts, sts, sst2: paths or dataset specs) replace the
    recipe's values. Bad input raises UserError before anything is written (`plan_pipeline`)."""
    o = config or PipelineConfig(**checked(PipelineConfig, options, "run_pipeline"))
    resume, force, quiet = o.resume, o.force, o.quiet
    log = log or (lambda m: None if quiet else _stderr(m))
    plan = plan_pipeline(recipe, out, o)
    for skipped in plan.skipped:
        log(skipped["message"])
    # ---- every check passed: from here on we write (into the work dir only, until the final report)
    with kept_on_interrupt(f"interrupted; the finished stages are kept in {plan.work}: rerun with --resume to continue", replace=True):
        state = _prepare_work(plan.work, plan.recipe, resume, force)
        state.data["runs"] = state.data.get("runs", 0) + 1
        state.save()
        run = _Run(plan, state, log, resume, quiet, o.cache_dir)
        data = _prepare_data(run)
        model = _student_stages(run, data)
        bench_items, student_labels = _export_stages(run, model, data)
        bench_dir = plan.work / "bench"
        run.stage("bench", bench_dir, lambda: run_bench_stage(bench_items, plan.recipe, data.bench_sts, bench_dir, log, data.bench_labels))
        report = json.loads((bench_dir / "report.json").read_text())
        summary = _summary(run, data, report, student_labels, model)
        _write_report(plan, plan.replace_out, bench_dir, summary)
        state.data["finished"] = _now()
        state.save()
        log(f"report written to {plan.out} (targets met: {summary['targets']['all_met']})")
    return PipelineReport(out_dir=plan.out, work_dir=plan.work, summary=summary)


@dataclass
class _Run:
    """What every stage of one pipeline run needs: the plan, the resumable state and how to report."""

    plan: Plan
    state: State
    log: Callable[[str], None]
    resume: bool
    quiet: bool
    cache_dir: str | Path | None

    def stage(self, name: str, out: Path, fn: Callable[[], Any]) -> bool:
        """`_run_stage` with this run's state, log and resume flag."""
        return _run_stage(self.state, name, out, fn, self.log, self.resume)


@dataclass
class _Data:
    """The run's text inputs, written into the work dir: corpus sources, prepared corpus, STS files."""

    sources: list[Path]
    prepared: list[Path]
    eval_sts: Path | None
    bench_sts: Path | None
    eval_labels: Path | None = None
    bench_labels: Path | None = None
    finetune: Path | None = None


def _prepare_data(run: _Run) -> _Data:
    """Materialise dataset inputs, prepare the training corpus and the STS subset used to pick checkpoints."""
    from edgebert.data import table_sentences
    from edgebert.pipeline.corpus import prepare_corpus, write_sts_subset

    plan, recipe = run.plan, run.plan.recipe
    data_dir = plan.work / "corpus"
    sources = [c.materialize(data_dir) for c in plan.corpus]
    bench_labels = plan.bench_labels.materialize(data_dir) if plan.bench_labels else None
    eval_source = plan.eval_sts.materialize(data_dir) if plan.eval_sts else None
    eval_sts = write_sts_subset(eval_source, recipe.distill.eval_sts_limit, data_dir / "eval-sts.csv") if eval_source else None
    # never distilled on: the bench's labelled sentences (it scores them) and the pairs that choose checkpoints
    held_out = (_sentences(bench_labels) if bench_labels else set()) | (set(table_sentences(eval_sts)) if eval_sts else set())
    dataset_lists = [p for c, p in zip(plan.corpus, sources) if c.dataset is not None]  # filtered like tables
    prepared = prepare_corpus(sources, data_dir, exclude=held_out, sentence_lists=dataset_lists)
    sentence_sets = [p for c, p in zip(plan.corpus, prepared) if _is_sentence_set(c)]
    if recipe.distill.augment and sentence_sets:  # none: a skipped step (skipped_steps), reported as such
        prepared.append(_augmented(run, sentence_sets, data_dir))
    bench_sts = plan.bench_sts.materialize(data_dir) if plan.bench_sts else None
    eval_labels = plan.eval_labels.materialize(data_dir) if plan.eval_labels else None
    finetune = plan.finetune.materialize(data_dir) if plan.finetune else None
    run.log(f"recipe {recipe.name} ({recipe.fingerprint()}); teacher {plan.teacher_dir}; corpus: {', '.join(str(p) for p in prepared)}")
    return _Data(sources, prepared, eval_sts, bench_sts, eval_labels, bench_labels, finetune)


def _is_sentence_set(corpus: Input) -> bool:
    """A corpus input of labelled-set sentences (an STS csv, an SST tsv, a dataset spec), not running text: what
    `[distill] augment` rewrites."""
    from edgebert.data import is_sentence_table

    return corpus.dataset is not None or (corpus.path is not None and is_sentence_table(corpus.path))


def _augmented(run: _Run, files: list[Path], data_dir: Path) -> Path:
    """`<work>/corpus/augmented.txt`: the recipe's word-replacement variants of `files` (the held-out sentences
    already dropped, so no variant of a checkpoint or bench sentence is distilled on)."""
    from edgebert.pipeline.corpus import write_augmented

    d = run.plan.recipe.distill
    out = write_augmented(run.plan.teacher_dir, files, data_dir / AUGMENTED_FILE, d.augment, d.augment_p, d.augment_k, d.seed)
    run.log(f"augmented: {d.augment} variant(s) of each sentence of {', '.join(f.name for f in files)} (p {d.augment_p:g}, "
            f"{d.augment_k} neighbours) → {out}")  # fmt: skip
    return out


def _sentences(labelled: Path) -> set[str]:
    """The whitespace-normalised sentences of a labelled TSV."""
    from edgebert.data import load_labelled_tsv

    return {" ".join(t.split()) for t in load_labelled_tsv(labelled).texts}


def _student_stages(run: _Run, data: _Data) -> Path:
    """Distil, then (as the recipe says) prune + heal, trim the vocabulary and fine-tune on labelled pairs; the final
    student's directory."""
    from edgebert.pipeline.corpus import write_calibration

    plan, recipe, work = run.plan, run.plan.recipe, run.plan.work
    student = work / "distill" / "student"
    cache = recipe.distill.teacher_cache_dir(recipe.base_dir, work)
    run.stage("distill", student, lambda: run_distill(
        plan.teacher, data.prepared, student, recipe, data.eval_sts, run.resume, run.cache_dir, run.quiet, data.eval_labels, cache
    ))  # fmt: skip
    model = student
    if recipe.compress.enabled:
        pruned = work / "compress" / "student"
        calibration = plan.calibration or write_calibration(
            data.prepared, recipe.compress.calibration_samples + 64, work / "corpus" / "calibration.txt", seed=recipe.compress.seed
        )
        run.stage("compress", pruned, lambda: run_compress(student, pruned, recipe, calibration, data.prepared, run.quiet))
        model = pruned
    if recipe.compress.heals_from_teacher:
        healed = work / "heal" / "student"
        run.stage("heal", healed, lambda: run_heal_from_teacher(
            plan.teacher, data.prepared, pruned, healed, recipe, data.eval_sts, run.resume, run.cache_dir, run.quiet, data.eval_labels, cache
        ))  # fmt: skip
        model = healed
    if recipe.vocab.trim:
        trimmed = work / "vocab" / "student"
        source = model
        run.stage("vocab", trimmed, lambda: run_trim_vocab(source, trimmed, recipe, data.prepared, run.quiet))
        model = trimmed
    if plan.redistill_teacher is not None:
        second, start = work / "redistill" / "student", model
        run.stage("redistill", second, lambda: run_redistill(  # its text sampled only when the stage runs
            plan.redistill_teacher, _redistill_corpus(run, data), start, second, recipe, data.eval_sts, run.resume,
            run.cache_dir, run.quiet,
        ))  # fmt: skip
        model = second
    if data.finetune is not None:
        tuned, begin, pairs = work / "finetune" / "student", model, data.finetune
        run.stage("finetune", tuned, lambda: run_finetune(begin, pairs, tuned, recipe, run.quiet, data.eval_sts))
        model = tuned
    return model


def _redistill_corpus(run: _Run, data: _Data) -> list[Path]:
    """The redistill stage's text: the prepared corpus without [distill]'s augmented variants (word swaps made with the
    first teacher's word table), each source sampled to `texts_per_source` texts into `<work>/corpus/redistill/` when
    set."""
    from edgebert.pipeline.corpus import write_sample

    r, d = run.plan.recipe.redistill, run.plan.recipe.distill
    sources = [p for p in data.prepared if p.name != AUGMENTED_FILE]
    if r.texts_per_source is None:
        return sources
    folder = run.plan.work / "corpus" / "redistill"
    return [write_sample(p, r.texts_per_source, folder / f"{i}-{p.name.split('.')[0]}.txt", d.sentences, r.seed) for i, p in enumerate(sources)]


def _export_calibration(run: _Run, data: _Data) -> Path:
    """The text int8-static exports calibrate on: the recipe's [export] calibration, else passages sampled (seeded)
    from the prepared corpus into the work dir (the export drops any parity sentence from it)."""
    from edgebert.config import DEFAULT_CALIBRATION_SAMPLES
    from edgebert.parity import PARITY_SENTENCES
    from edgebert.pipeline.corpus import write_calibration

    if run.plan.export_calibration is not None:
        return run.plan.export_calibration
    n = DEFAULT_CALIBRATION_SAMPLES + len(PARITY_SENTENCES)
    return write_calibration(data.prepared, n, run.plan.work / "corpus" / "export-calibration.txt", seed=run.plan.recipe.compress.seed)


def _export_stages(run: _Run, model: Path, data: _Data) -> tuple[list[str], dict[tuple[str, str], str]]:
    """The teacher's fp32 exports (for the speed-up targets), then every student target x quantization.

    Returns the bench items (label=dir) and the student exports' labels by (target, quantization); with no student
    exports, the PyTorch student's label under ("pytorch", "none"), so the targets and headline judge it."""
    from edgebert.export import CALIBRATED_QUANTIZATIONS

    plan, e, work, quiet = run.plan, run.plan.recipe.export, run.plan.work, run.quiet
    bench_items = [f"{TEACHER_LABEL}={plan.teacher_dir}"]
    if plan.redistill_teacher is not None:  # the second teacher beside the first, in PyTorch
        bench_items.append(f"{SECOND_TEACHER_LABEL}={plan.redistill_teacher}")
    for target in e.teacher_targets:
        d = work / "export" / f"teacher-{target}"
        run.stage(f"export:teacher-{target}", d, lambda t=target, d=d: run_export(t, "none", plan.teacher_dir, d, replace(e, min_cosine=None), quiet))
        bench_items.append(f"{TEACHER_LABEL}-{target}={d}")
    if plan.recipe.bench.student_pytorch:
        bench_items.append(f"student={model}")
    student_labels: dict[tuple[str, str], str] = {}
    if not e.student_exports() and plan.recipe.bench.student_pytorch:  # no exports: the targets judge the PyTorch student
        student_labels[("pytorch", "none")] = "student"
    for target, quant in e.student_exports():
        name = f"student-{target}" + ("" if quant == "none" else f"-{quant}")
        d = work / "export" / name
        calibration = _export_calibration(run, data) if quant in CALIBRATED_QUANTIZATIONS else None
        student_labels[(target, quant)] = name
        try:
            run.stage(f"export:{name}", d, lambda t=target, q=quant, d=d, c=calibration: run_export(t, q, model, d, e, quiet, calibration=c))
        except VerificationError as exc:  # a refusal is a result: the other exports and the bench still run
            run.state.record(f"export:{name}", status="refused", error=str(exc))
            run.log(f"export:{name}: refused: {exc}")
            continue
        bench_items.append(f"{name}={d}")
    return bench_items, student_labels


def _stage_scores(out: str | None) -> dict[str, Any] | None:
    """A training stage's checkpoint-choice scores from its manifest (STS Spearman, or a classifier's accuracy, on
    the --eval-sts / --eval-labels pairs; finetune's figure on its own held-out rows): the teacher's, the stage's start
    (`student_init`) and what it kept."""
    metrics = (read_manifest(Path(out)).get("metrics") or {}) if out else {}
    for key in ("sts_spearman", "accuracy", "held_out"):  # held_out: finetune's, on held-out rows of its own data
        scores = metrics.get(key)
        if isinstance(scores, dict) and "student_final" in scores:
            keep = ("teacher", "student_init", "student_final", "kept")
            return {"metric": scores.get("metric", key), **{k: scores.get(k) for k in keep}}
    return None


def _summary(
    run: _Run, data: _Data, report: dict[str, Any], student_labels: dict[tuple[str, str], str], student: Path
) -> dict[str, Any]:
    """pipeline.json: the recipe, the inputs, the final student, per-stage wall times and scores, the target
    verdicts and the headline rows."""
    plan, recipe = run.plan, run.plan.recipe
    stages = [{"stage": name, **entry} for name, entry in run.state.stages.items()]
    for stage in stages:
        scores = _stage_scores(stage.get("out")) if not stage["stage"].startswith(("export:", "bench")) else None
        if scores:
            stage["scores"] = scores
    total = sum(float(s.get("wall_s") or 0) for s in stages)
    failed_items = [i["label"] for i in report.get("items", []) if i.get("status") != "ok"]
    refused = {name.removeprefix("export:"): entry.get("error") for name, entry in run.state.stages.items() if entry.get("status") == "refused"}
    return {
        "schema": SCHEMA,
        "edgebert_version": __version__,
        "created": _now(),
        "recipe": recipe.as_dict(),
        "recipe_fingerprint": recipe.fingerprint(),
        "teacher": str(plan.teacher_dir),
        "corpus": {"sources": [str(p) for p in data.sources], "prepared": [str(p) for p in data.prepared]},
        "work_dir": str(plan.work),
        "student": str(student),  # the final student directory (what the exports were made from)
        "runs": run.state.data.get("runs"),
        "stages": stages,
        "total_stage_wall_s": round(total, 2),
        "targets": evaluate_targets(recipe, report, student_labels, total, refused),
        "skipped": plan.skipped,
        "refused_exports": refused,  # export label: the refusal (parity below the gate; the recipes that hold)
        "bench": {"reference": report.get("reference"), "failed_items": failed_items, "status": report.get("status")},
        "headline": headline(report, student_labels, refused),
    }


def _write_report(plan: Plan, force: bool, bench_dir: Path, summary: dict[str, Any]) -> None:
    """The bench report, the recipe and pipeline.json into --out, atomically."""
    with atomic_output_dir(plan.out, force=force, inputs=plan.inputs) as tmp:
        for name in REPORT_FILES:
            if (bench_dir / name).exists():
                shutil.copy2(bench_dir / name, tmp / name)
        if plan.recipe.source and Path(plan.recipe.source).is_file():
            shutil.copy2(plan.recipe.source, tmp / "recipe.toml")
        (tmp / "pipeline.json").write_text(report_json(summary))
