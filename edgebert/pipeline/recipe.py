"""Pipeline recipes: a TOML file parsed (tomllib) into dataclasses; an unknown key is a UserError naming it.

Sections: top-level `name`, `description`, `teacher`, `corpus`; [distill] (the `distill()` keyword arguments),
[compress] (optional pruning and healing), [vocab] (optional trimming), [redistill] (optional: a second sentence
embedder distilled into the student across tokenizers), [finetune] (optional supervised training on labelled pairs),
[export] (targets × quantizations), [bench] (what `edgebert bench` measures) and [targets] (what the run must reach). Relative paths in a recipe are resolved against the recipe file's directory.
The shipped presets name no data: the corpus and the STS sets are inputs (`edgebert pipeline --corpus ... --eval-sts
... --sts ...`, see `edgebert.pipeline.inputs`), so a preset runs from an installed wheel.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebert.config import (
    STUDENT_SHAPE_OPTIONS, BenchRecipe, CompressRecipe, DistillRecipe, ExportRecipe, FinetuneRecipe, HealConfig, VocabConfig,
)
from edgebert.options import default as _default
from edgebert.errors import UserError
from edgebert.options import default
from edgebert.sources import DEFAULT_MODEL

# Shipped recipes (package data, so `--preset` works from a wheel too); they name no data files.
PRESETS_DIR = Path(__file__).resolve().parent / "presets"
TARGET_QUANTIZATIONS = {
    "onnx": ("none", "int8", "int8-static", "fp16"), "tflite": ("none", "int8", "int8-static", "fp16"), "tfjs": ("none", "uint8", "float16"),
}


@dataclass
class DistillSection(DistillRecipe):
    """Keyword arguments of `edgebert.distill.distill` (same names, same defaults: DistillRecipe's), and how many
    pairs of the STS set (`eval_sts`, or `--eval-sts`) pick the best checkpoint: a held-out slice written to the
    work dir (keep the bench's STS set out of it)."""

    eval_sts_limit: int | None = None
    # `teacher_cache = true`: the teacher's outputs cached in the run's work dir (teacher-cache/), shared by the
    # distill and teacher-healing stages and by resumed runs; a path: that directory (relative to the recipe)
    teacher_cache: str | bool | None = None  # type: ignore[assignment]
    # Word-replacement variants of the corpus's labelled-set sentences (STS csv, SST tsv, dataset specs; after the
    # held-out sentences are dropped) added to the text both training stages read (`edgebert.distill.augment`):
    # `augment` rewrites per sentence (0: off), each word swapped with probability `augment_p` for one of its
    # `augment_k` nearest words in the teacher's word-embedding table; seeded by `seed`.
    augment: int = 0
    augment_p: float = 0.3
    augment_k: int = 8

    def kwargs(self) -> dict[str, Any]:
        """distill()'s keyword arguments but the data, the teacher cache and the augmentation (the pipeline passes
        or makes those)."""
        skip = {"eval_sts", "eval_sts_limit", "eval_labels", "teacher_cache", "augment", "augment_p", "augment_k"}
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}

    def teacher_cache_dir(self, base: Path, work: Path) -> Path | None:
        """Where the run caches the teacher's outputs: `work`/teacher-cache for `true`, a path (relative to the
        recipe's directory `base`) as given, None when off."""
        if self.teacher_cache is True:
            return work / "teacher-cache"
        return resolve_path(self.teacher_cache, base) if self.teacher_cache else None


@dataclass
class CompressSection(CompressRecipe):
    """Keyword arguments of `edgebert.compress.compress` (CompressRecipe's defaults; `calibration` None: passages
    sampled from the corpus into the work dir) and healing (compress --heal-steps: distil the unpruned student back
    into the pruned one on the corpus, HealConfig's defaults); the stage runs only when something is pruned."""

    heal_steps: int = default(HealConfig, "steps")
    heal_lr: float = default(HealConfig, "lr")
    heal_seq_len: int | None = default(HealConfig, "seq_len")
    # "student": compress heals from the unpruned student (HealConfig: its batch, frozen embeddings); "teacher": a
    # stage of its own distils the teacher into the pruned student with the [distill] losses, layer map, batch,
    # sentences and teacher cache (heal_steps, heal_lr, heal_seq_len replacing steps, lr and seq_len)
    heal_from: str = "student"
    # The heal stage (heal_from = "teacher") trains on this runtime's 4-bit weight grid (edgebert.weight_grids; distill
    # --weight-grid): the healed student's `int4` export to that target then computes it exactly.
    heal_weight_grid: str | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.prune_heads or self.prune_ffn)

    @property
    def heals_from_teacher(self) -> bool:
        """Healing runs as a stage of its own after compress (`heal_from = "teacher"`), not inside compress."""
        return self.enabled and bool(self.heal_steps) and self.heal_from == "teacher"


HEAL_SOURCES = ("student", "teacher")


@dataclass
class VocabSection(VocabConfig):
    """Vocabulary trimming (`edgebert compress --trim-vocab`) to the recipe's corpus, after pruning."""

    trim: bool = False


def _distill_default(name: str) -> Any:
    return _default(DistillRecipe, name)


@dataclass
class RedistillSection:
    """A second sentence embedder distilled into the final student across tokenizers (`edgebert distill --student-init
    STUDENT --across-tokenizers`: its sentence embeddings and in-batch similarities, whatever the two tokenizers),
    after pruning, healing and vocabulary trimming and before the finetune stage; the student keeps its shape and
    tokenizer. Off unless `teacher` (or `--redistill-teacher`) names the model: a directory (relative to the recipe)
    or a hub id. It trains on the run's corpus (as [distill] prepares it, without its `augment` variants; at most
    `texts_per_source` texts of each source, a seeded sample, when set) and keeps the checkpoint best on the run's
    --eval-sts pairs; the other keys are distill's options of the same names and defaults."""

    teacher: str | None = None
    # each corpus source's texts (sentences with [distill] sentences) sampled down to this many: a large source kept
    # from drowning small ones, and the second teacher's targets computed for fewer texts; None: every text
    texts_per_source: int | None = None
    alpha_pooled: float | None = _distill_default("alpha_pooled")
    alpha_sim: float = _distill_default("alpha_sim")
    steps: int = _distill_default("steps")
    batch_size: int = _distill_default("batch_size")
    grad_accum: int = _distill_default("grad_accum")
    seq_len: int = _distill_default("seq_len")
    lr: float = _distill_default("lr")
    warmup_ratio: float = _distill_default("warmup_ratio")
    weight_decay: float = _distill_default("weight_decay")
    max_grad_norm: float = _distill_default("max_grad_norm")
    save_steps: int | None = _distill_default("save_steps")
    eval_steps: int | None = _distill_default("eval_steps")
    logging_steps: int | None = _distill_default("logging_steps")
    seed: int = _distill_default("seed")

    @property
    def enabled(self) -> bool:
        return self.teacher is not None

    def distill_options(self) -> dict[str, Any]:
        """The section's keys that are distill()'s options (all but the teacher and the corpus sampling)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("teacher", "texts_per_source")}

    def kwargs(self, student: str | Path, sentences: bool) -> dict[str, Any]:
        """`distill()`'s keyword arguments, the data aside: this section's options, `student` as --student-init across
        tokenizers, [distill]'s `sentences` (the corpus read as the first stage read it)."""
        return {**self.distill_options(), "student_init": str(student), "across_tokenizers": True, "sentences": sentences}


@dataclass
class FinetuneSection(FinetuneRecipe):
    """`edgebert finetune` on the final student (after distillation, pruning, healing, trimming and redistillation; the
    exports ship what it keeps), with FinetuneRecipe's options; the stage runs when `data` (or `--finetune-data`) names
    labelled pairs: a csv, tsv or jsonl file relative to the recipe, or a dataset spec (its rows as they are, columns
    by name). `held_out_eval_sts = true`: the epoch or soup is chosen on the run's --eval-sts pairs (those that chose
    the distillation checkpoints; their pairs in `data` are not trained on, before a `refit`)."""

    data: str | None = None
    held_out_eval_sts: bool = False

    def kwargs(self, base: Path, eval_sts: Path | None = None) -> dict[str, Any]:
        """finetune()'s keyword arguments but the data (`held_out_file` made absolute against the recipe's `base`;
        the run's `eval_sts` pairs with `held_out_eval_sts`)."""
        kwargs = {f.name: getattr(self, f.name) for f in dataclasses.fields(FinetuneRecipe)}
        if self.held_out_file:
            kwargs["held_out_file"] = str(resolve_path(self.held_out_file, base))
        if self.held_out_eval_sts and eval_sts is not None:
            kwargs["held_out_file"] = str(eval_sts)
        return kwargs


@dataclass
class ExportSection(ExportRecipe):
    """Student exports (target → quantizations, 'none' = fp32) and the teacher's fp32 exports for comparison."""

    # Empty ({}): no student exports, the student is benched in PyTorch only.
    targets: dict[str, list[str]] = field(default_factory=lambda: {"onnx": ["int8"], "tflite": ["int8"], "tfjs": ["uint8"]})
    teacher_targets: list[str] = field(default_factory=lambda: ["onnx"])  # fp32 teacher exports benched beside
    # int8-static exports calibrate activation ranges on this text (None: passages sampled from the corpus)
    calibration: str | None = None

    def student_exports(self) -> list[tuple[str, str]]:
        return [(t, q) for t, qs in self.targets.items() for q in qs]


@dataclass
class BenchSection(BenchRecipe):
    """What `edgebert bench` measures (`sts` None: no STS retention, its targets not evaluated; `sst2`: the labelled
    sentences a classifier teacher's items are scored on, None: accuracy targets not evaluated); the reference is
    always the teacher in PyTorch fp32."""

    student_pytorch: bool = True  # bench the (compressed) student in PyTorch too


@dataclass
class TargetsSection:
    """What the pipeline's bench must show; None = not checked."""

    max_mb: float | None = None  # every student export, on disk (1 MB = 10^6 bytes, as in the bench report)
    min_sts_retention: float | None = None  # every student export, vs the teacher in PyTorch fp32
    min_accuracy_retention: float | None = None  # classifier teachers: every student export's accuracy / the teacher's
    min_onnx_speedup: float | None = None  # best student ONNX export vs the teacher's fp32 ONNX export
    min_tfjs_speedup: float | None = None  # best student TF.js export vs the teacher's fp32 TF.js export
    max_wall_minutes: float | None = None  # the whole pipeline


@dataclass
class Recipe:
    name: str = "custom"
    description: str = ""
    teacher: str = DEFAULT_MODEL
    corpus: list[str] | None = None  # files, dirs or dataset specs; None: `--corpus` must name it
    distill: DistillSection = field(default_factory=DistillSection)
    compress: CompressSection = field(default_factory=CompressSection)
    vocab: VocabSection = field(default_factory=VocabSection)
    redistill: RedistillSection = field(default_factory=RedistillSection)
    finetune: FinetuneSection = field(default_factory=FinetuneSection)
    export: ExportSection = field(default_factory=ExportSection)
    bench: BenchSection = field(default_factory=BenchSection)
    targets: TargetsSection = field(default_factory=TargetsSection)
    source: str | None = None  # the file it came from

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def base_dir(self) -> Path:
        """What the recipe's relative paths are relative to: its file's directory (the working directory for a
        recipe parsed from text)."""
        return Path(self.source).expanduser().absolute().parent if self.source else Path.cwd()

    def fingerprint(self) -> str:
        """What a resumed run must share with the run it resumes (everything but where the recipe came from; a
        [finetune] or [redistill] section left as it is does not count, so a run without the stage keeps its
        fingerprint)."""
        idle = {k for k, section in (("finetune", FinetuneSection()), ("redistill", RedistillSection())) if getattr(self, k) == section}
        body = {k: v for k, v in self.as_dict().items() if k != "source" and k not in idle}
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def heal_kwargs(self, pruned: str | Path) -> dict[str, Any]:
        """`edgebert.distill.distill()`'s keyword arguments for the heal stage (`[compress] heal_from = "teacher"`),
        the data and the teacher cache aside: the [distill] losses, layer map, batch and text without the student's
        shape (`pruned` is the student, kept as it is), for heal_steps at heal_lr on heal_seq_len tokens, checkpoints
        every ~10 % of the steps, on the heal_weight_grid when one is set."""
        c = self.compress
        kwargs = {k: v for k, v in self.distill.kwargs().items() if k not in STUDENT_SHAPE_OPTIONS}
        kwargs.update(steps=c.heal_steps, lr=c.heal_lr, seq_len=c.heal_seq_len or self.distill.seq_len,
                      save_steps=None, eval_steps=None, logging_steps=None, student_init=str(pruned))  # fmt: skip
        if c.heal_weight_grid:
            kwargs["weight_grid"] = c.heal_weight_grid
        return kwargs


SECTIONS = {"distill": DistillSection, "compress": CompressSection, "vocab": VocabSection, "redistill": RedistillSection,
            "finetune": FinetuneSection, "export": ExportSection, "bench": BenchSection, "targets": TargetsSection}  # fmt: skip
TOP_LEVEL = {"name", "description", "teacher", "corpus"}
EXTENDS = "extends"  # top-level key: a shipped preset this recipe starts from (its keys win, section by section)


def resolve_path(path: str | Path, base: Path) -> Path:
    """`path` (~ expanded) made absolute against `base` when relative."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base / p).resolve()


def _build(cls: type, table: Any, where: str) -> Any:
    if not isinstance(table, dict):
        raise UserError(f"recipe: [{where}] must be a table, got {type(table).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - names)
    if unknown:
        raise UserError(f"recipe: unknown key '{where}.{unknown[0]}'; known keys in [{where}]: {', '.join(sorted(names))}")
    return cls(**table)


def _check_type(value: Any, kinds: tuple[type, ...], key: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) and bool not in kinds:
        raise UserError(f"recipe: {key} must be {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
    if not isinstance(value, kinds):
        raise UserError(f"recipe: {key} must be {' or '.join(k.__name__ for k in kinds)}, got {value!r}")


def _validate_types(recipe: Recipe) -> None:
    """Each field against its annotation (int / float / str / bool / list / dict), so typos fail before training."""
    kinds = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}
    for section in SECTIONS:
        obj = getattr(recipe, section)
        for f in dataclasses.fields(obj):
            ann = str(f.type).replace(" | None", "")
            value = getattr(obj, f.name)
            key = f"{section}.{f.name}"
            if ann in kinds:
                _check_type(value, kinds[ann], key)
            elif ann.startswith("list"):
                _check_type(value, (list,), key)
            elif ann.startswith("dict"):
                _check_type(value, (dict,), key)


def validate_recipe(recipe: Recipe) -> None:
    """Types and ranges of every section's values (UserError naming the key), before any stage runs."""
    _validate(recipe)


def _validate(recipe: Recipe) -> None:
    _validate_types(recipe)
    if recipe.corpus is not None and (not isinstance(recipe.corpus, list) or not all(isinstance(c, str) for c in recipe.corpus)):
        raise UserError("recipe: corpus must be a list of paths")
    for target, quants in recipe.export.targets.items():
        if target not in TARGET_QUANTIZATIONS:
            raise UserError(f"recipe: export.targets has unknown target '{target}'; choose from {', '.join(TARGET_QUANTIZATIONS)}")
        if not isinstance(quants, list) or not quants:
            raise UserError(f"recipe: export.targets.{target} must be a non-empty list of quantizations")
        for q in quants:
            if q not in TARGET_QUANTIZATIONS[target]:
                raise UserError(
                    f"recipe: export.targets.{target} has unknown quantization '{q}'; choose from {', '.join(TARGET_QUANTIZATIONS[target])}"
                )
    for target in recipe.export.teacher_targets:
        if target not in TARGET_QUANTIZATIONS:
            raise UserError(f"recipe: export.teacher_targets has unknown target '{target}'")
    t = recipe.targets
    if t.min_onnx_speedup is not None and "onnx" not in recipe.export.teacher_targets:
        raise UserError("recipe: targets.min_onnx_speedup needs 'onnx' in export.teacher_targets (the teacher's fp32 ONNX export)")
    if t.min_tfjs_speedup is not None and "tfjs" not in recipe.export.teacher_targets:
        raise UserError("recipe: targets.min_tfjs_speedup needs 'tfjs' in export.teacher_targets (the teacher's fp32 TF.js export)")
    if recipe.compress.enabled and recipe.compress.seq_len > recipe.distill.seq_len * 4:
        pass  # compress checks its own limits
    if recipe.vocab.min_count < 1 or (recipe.vocab.max_size is not None and recipe.vocab.max_size < 1):
        raise UserError("recipe: vocab.min_count and vocab.max_size must be at least 1")
    if recipe.compress.heal_steps < 0 or (recipe.compress.heal_steps and not recipe.compress.enabled):
        raise UserError("recipe: compress.heal_steps needs pruning (prune_heads or prune_ffn) and must not be negative")
    if recipe.distill.steps < 1:
        raise UserError(f"recipe: distill.steps must be at least 1, got {recipe.distill.steps}")
    for section, check in (("distill", _check_distill), ("compress", _check_compress), ("vocab", _check_vocab),
                           ("redistill", _check_redistill), ("finetune", _check_finetune), ("export", _check_export),
                           ("bench", _check_bench), ("targets", _check_targets)):  # fmt: skip
        try:
            check(getattr(recipe, section))
        except UserError as exc:
            raise UserError(_recipe_message(section, str(exc))) from exc


def _recipe_message(section: str, message: str) -> str:
    """A verb's message in recipe terms: `--warmup-ratio must ...` -> `recipe: distill.warmup_ratio must ...`."""
    message = re.sub(r"--([a-z0-9-]+)", lambda m: m.group(1).replace("-", "_"), message)
    fields = {f.name for f in dataclasses.fields(SECTIONS[section])}
    first = message.split(" ", 1)[0]
    return f"recipe: {section}.{message}" if first in fields else f"recipe: [{section}] {message}"


def _check_distill(d: DistillSection) -> None:
    """The [distill] values, checked by distill()'s own checks (flag names as on the command line)."""
    from edgebert import validate
    from edgebert.config import CE_POSITIONS, COS_LAYERS, PACKINGS
    from edgebert.distill.checks import check_numbers

    check_numbers(**d.kwargs())
    validate.choice("packing", d.packing, PACKINGS)
    validate.choice("ce_positions", d.ce_positions, CE_POSITIONS)
    validate.choice("cos_layers", d.cos_layers, COS_LAYERS)
    for layer in d.layer_map or []:
        validate.integer("layer_map entries", layer, 0)
    validate.optional_integer("eval_sts_limit", d.eval_sts_limit, 2, hint="pairs")
    if d.teacher_cache is not None and not isinstance(d.teacher_cache, (bool, str)):
        raise UserError(f"teacher_cache must be true, false or a directory, got {d.teacher_cache!r}")
    validate.integer("augment", d.augment, 0)
    validate.number("augment_p", d.augment_p, 0.0, 1.0, low_open=True)
    validate.integer("augment_k", d.augment_k, 1)


def _check_compress(c: CompressSection) -> None:
    """The [compress] values, checked by compress()'s and healing's own checks."""
    from edgebert import validate
    from edgebert.compress.compress import check_numbers
    from edgebert.compress.importance import METHODS
    from edgebert.compress.prune import FFN_SCOPES, HEAD_SCOPES, check_fraction

    check_fraction("prune_heads", c.prune_heads)
    check_fraction("prune_ffn", c.prune_ffn)
    validate.choice("head_scope", c.head_scope, HEAD_SCOPES)
    validate.choice("ffn_scope", c.ffn_scope, FFN_SCOPES)
    validate.choice("importance", c.importance, METHODS)
    check_numbers(calibration_samples=c.calibration_samples, seq_len=c.seq_len, batch_size=c.batch_size, seed=c.seed)
    validate.integer("heal_steps", c.heal_steps, 0)
    validate.number("heal_lr", c.heal_lr, 0.0, low_open=True)
    validate.optional_integer("heal_seq_len", c.heal_seq_len, 8, hint="tokens per healing sequence")
    validate.choice("heal_from", c.heal_from, HEAL_SOURCES)
    if c.heal_weight_grid is not None:
        from edgebert.weight_grids import grid_named

        grid_named(c.heal_weight_grid)
        if not c.heals_from_teacher:
            raise UserError("heal_weight_grid needs the heal stage: heal_steps > 0, heal_from = \"teacher\" and pruning")


def _check_vocab(v: VocabSection) -> None:
    from edgebert.compress.vocab import _check_args

    _check_args(v.min_count, v.max_size)


def _check_redistill(r: RedistillSection) -> None:
    """The [redistill] values, checked by distill()'s own checks (a cross-tokenizer run's loss weights too)."""
    from edgebert import validate
    from edgebert.distill.across import sentence_loss_weights
    from edgebert.distill.checks import check_numbers

    validate.path_like("teacher", r.teacher)
    validate.optional_integer("texts_per_source", r.texts_per_source, 1)
    check_numbers(**r.distill_options())
    sentence_loss_weights(r.alpha_pooled, r.alpha_sim)


def _check_finetune(f: FinetuneSection) -> None:
    """The [finetune] values, checked by finetune()'s own option checks (its data is checked with the inputs)."""
    from edgebert import validate
    from edgebert.finetune.api import check_options

    if f.held_out_eval_sts and (f.held_out is not None or f.held_out_file is not None):
        raise UserError("held_out_eval_sts chooses on the run's --eval-sts pairs: set it or held_out / held_out_file, not both")
    check_options(f)
    if f.data is not None:
        validate.path_like("data", f.data)


def _check_export(e: ExportSection) -> None:
    """The [export] values, checked by export()'s own argument check for every target and quantization."""
    from edgebert import buckets
    from edgebert.export import MIN_SEQ_LEN, check_arguments

    for target, quantize in e.student_exports():
        check_arguments(target, None, None, quantize, e.seq_len, e.min_cosine, None, None)
    buckets.lengths(e.seq_len, bool(e.buckets), MIN_SEQ_LEN)  # buckets = true wants one seq_len


def _check_bench(b: BenchSection) -> None:
    """The [bench] values, checked by the bench harness's own checks."""
    from edgebert.bench.harness import check_numbers
    from edgebert.bench.measure import MeasureJob

    job = MeasureJob(seq_lens=b.seq_len, batches=b.batch, threads=b.threads, warmup=b.warmup, repeats=b.repeats,
                     sts_limit=b.sts_limit, sts_limits=b.sts_limit_for, sst2_limit=b.sst2_limit)  # fmt: skip
    check_numbers(job, b.timeout)


def _check_targets(t: TargetsSection) -> None:
    from edgebert import validate

    for f in dataclasses.fields(t):  # sizes and times must be positive; the ratios only finite
        positive = f.name in ("max_mb", "max_wall_minutes")
        validate.optional_number(f.name, getattr(t, f.name), 0.0 if positive else None, low_open=positive)


def parse_recipe(text: str, source: str | None = None) -> Recipe:
    """A Recipe from TOML text; UserError on syntax errors, unknown keys and wrong types."""
    where = source or "recipe"
    data = _extended(_toml(text, where), where)
    unknown = sorted(set(data) - TOP_LEVEL - set(SECTIONS))
    if unknown:
        raise UserError(
            f"recipe: unknown key '{unknown[0]}' in {where}; known: {', '.join(sorted(TOP_LEVEL | {EXTENDS}))} and sections "
            + ", ".join(f"[{s}]" for s in SECTIONS)
        )
    top = {k: data[k] for k in TOP_LEVEL if k in data}
    for key in ("name", "description", "teacher"):
        if key in top and not isinstance(top[key], str):
            raise UserError(f"recipe: {key} must be a string, got {top[key]!r}")
    sections = {name: _build(cls, data.get(name, {}), name) for name, cls in SECTIONS.items()}
    recipe = Recipe(**top, **sections, source=source)
    _validate(recipe)
    return recipe


def _toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{where} is not valid TOML ({exc})") from exc


def _extended(data: dict[str, Any], where: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """`extends = "PRESET"`: the preset's tables (its own `extends` applied first) with this recipe's keys laid over
    them, key by key within each section (a key's value replaces the preset's whole value), except [targets]: a recipe
    that states its own replaces the preset's (the targets judge a run, and a changed schedule or export list is
    another run); without `extends`, `data` unchanged."""
    if EXTENDS not in data:
        return data
    name = data.pop(EXTENDS)
    path = preset_path(name, f"recipe: extends = {name!r} in {where} is not a shipped preset")
    if name in seen:
        raise UserError(f"recipe: presets {' -> '.join((*seen, name))} extend each other in a circle")
    merged = _extended(_toml(path.read_text(encoding="utf-8"), str(path)), str(path), (*seen, name))
    for key, value in data.items():
        if key in SECTIONS and key != "targets" and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def load_recipe(path: str | Path) -> Recipe:
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"--recipe {path} is not a file; pass a TOML recipe (see edgebert/pipeline/presets/)")
    from edgebert import validate

    return parse_recipe(validate.read_text("--recipe", path), source=str(path))


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml")) if PRESETS_DIR.is_dir() else []


def preset_path(name: Any, unknown: str, hint: str = "") -> Path:
    """The shipped preset `name`'s file; when there is none, UserError "`unknown`; choose one of: <presets>`hint`"."""
    path = PRESETS_DIR / f"{name}.toml" if isinstance(name, str) else None
    if path is None or not path.is_file():
        known = ", ".join(preset_names()) or f"none found in {PRESETS_DIR}"
        raise UserError(f"{unknown}; choose one of: {known}{hint}")
    return path


def load_preset(name: str) -> Recipe:
    return load_recipe(preset_path(name, f"--preset {name} is unknown", " (or pass --recipe FILE)"))
