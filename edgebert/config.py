"""One config dataclass per verb: the only place an option's default is written.

The CLI (`edgebert/commands/`, via `options.add_options`), the Python API (`edgebert.<verb>(...)`, via
`options.keyword_options`) and the TOML recipe (`edgebert/pipeline/recipe.py`) all read their defaults from here.
A field's metadata carries its help text and how the command line spells it (see `option`).

Where a recipe section may set only part of a verb's options, that part is a base class (`DistillRecipe`,
`CompressRecipe`, `ExportRecipe`, `BenchRecipe`) which both the verb's config and the recipe section extend.
This module imports nothing heavy: `edgebert --help` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Choices the CLI offers and the verbs check.
CE_POSITIONS = ("masked", "all")
COS_LAYERS = ("last", "mapped")
PACKINGS = ("truncate", "pack")
HEAD_SCOPES = ("global", "layer")
IMPORTANCE_METHODS = ("auto", "mlm", "output-sensitivity")
BENCH_TARGETS = ("pytorch", "onnx", "tflite", "tfjs", "executorch")
# Where an export's files go: edgebert's own layout, or also the one transformers.js's pipeline() loads (onnx only).
LAYOUTS = ("edgebert", "transformers.js")

# Loss weights chosen by distill's "auto" (None): DistilBERT's triple loss when the teacher has its own masked-LM
# head; cosine-only on unmasked text when it has none (a head fitted to a sentence-embedding teacher such as
# all-MiniLM-L6-v2 reaches ~8 % masked-token accuracy, so its soft targets teach noise).
MASKED_SHARE = 0.15  # DistilBERT's share of masked tokens
SEQ_LEN = 128  # tokens per sequence wherever a length is not given: the packaged teacher's training length
TRIPLE_LOSS = {"alpha_mlm": 2.0, "alpha_ce": 5.0, "alpha_cos": 1.0, "alpha_pooled": 0.0}
COSINE_ONLY = {"alpha_mlm": 0.0, "alpha_ce": 0.0, "alpha_cos": 1.0, "alpha_pooled": 1.0}
# Task distillation (a classifier teacher): DistilBERT's soft targets on the task logits (ce, KL at T × T²) plus the
# hidden-state cosine, on unmasked text (the classifier reads real sentences); no masked-LM term (no MLM head).
TASK_LOSS = {"alpha_mlm": 0.0, "alpha_ce": 5.0, "alpha_cos": 1.0, "alpha_pooled": 0.0}
TEMPERATURE = 2.0
ALPHA_SIM = 0.0  # in-batch similarity-matrix MSE: off unless asked for (not part of auto)
SENTENCE_MIN_CHARS = 20  # a split sentence shorter than this is joined to its neighbour (data.split_sentences)
AUTO_LOSSES_HELP = (
    f"unset weights are auto: DistilBERT's (mlm {TRIPLE_LOSS['alpha_mlm']:g}, ce {TRIPLE_LOSS['alpha_ce']:g}, cos "
    f"{TRIPLE_LOSS['alpha_cos']:g}, {MASKED_SHARE:.0%} masked) when the teacher has its own masked-LM head; task "
    f"distillation (ce {TASK_LOSS['alpha_ce']:g} on the classifier's logits, cos {TASK_LOSS['alpha_cos']:g}, unmasked "
    f"text) for a sequence classifier; else cosine-only (cos {COSINE_ONLY['alpha_cos']:g}, pooled "
    f"{COSINE_ONLY['alpha_pooled']:g}, unmasked text); values given always win"
)
DEFAULT_HEAL_LOSSES = "cos=1,pooled=1"
DEFAULT_CALIBRATION_SAMPLES = 200  # export --quantize int8-static
# TF.js graphs of at most this many tokens compute attention batched over heads, longer ones one 2-D product per head
# (edgebert/targets/tf_ops.py, Forms.per_head). Batched has fewer ops (228 vs 289 on the `small` student); per-head runs its
# products on XNNPACK. Measured on that student, uint8, Node wasm, interleaved medians of 150 calls on a shared
# machine: batched is faster at 16 (6.8 vs 7.9 ms) and 32 tokens (9.6 vs 10.3 ms), slower at 64 (16.9 vs 15.9 ms).
TFJS_BATCHED_ATTENTION_MAX_LEN = 32
# `--buckets`: the lengths of a bucketed static export (TFLite, TF.js), those below --seq-len plus --seq-len itself.
# Measured on the `small` student, TF.js uint8, Node wasm, each call right after a 128-token one
# (benchmarks/results/buckets-student/bucket-curve.txt, AMD EPYC): about 1.7 ms + 0.18 ms a token up to 32 (12: 3.9,
# 16: 4.5, 32: 7.6, 128: 24.4 ms); XNNPACK computes rows in tiles, so 14 tokens cost what 16 do. Half of the STS-B dev
# sentences have at most 14 tokens, 40 % at most 12; each extra TF.js graph adds about 230 KB of JSON, each extra
# int8 TFLite signature about 0.6 MB on that student (its per-row quantization parameters, stored per signature).
DEFAULT_BUCKETS = (12, 16, 32, 64, 128)
# The ARM64 kernel paths (edgebert.targets.arm64_paths): the qemu CPU models whose int8 kernels differ (NEON without
# dot product, dot product, i8mm + SVE2), and the parity texts of each check they run (emulation: seconds a row).
ARM64_CPUS = ("cortex-a53", "cortex-a76", "cortex-a710")
ARM64_TEXTS = 4


def option(default: Any = None, help: str = "", *, group: str = "optional", cli: bool = True, **argparse: Any) -> Any:
    """A dataclass field: its one default (a list or dict is copied per instance), its help and its command-line form.

    `group`: the --help section; `cli=False`: API and recipe only; `argparse`: extra add_argument keywords
    (choices, metavar, nargs, action, type, flag)."""
    metadata = {"help": help, "group": group, "cli": cli, "argparse": argparse}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


# ------------------------------------------------------------------------------------------------- distill


@dataclass
class DistillRecipe:
    """The `distill()` options a recipe's [distill] section may set (None = decided by distill, see the help)."""

    student_layers: int | None = option(None, "layers (default: half the teacher's)", group="student")
    student_hidden: int | None = option(None, "width (default: the teacher's; smaller = TinyBERT shape)", group="student")
    student_heads: int | None = option(None, "attention heads (default: keeps the teacher's head size)", group="student")
    student_ffn: int | None = option(None, "feed-forward size (default: scaled with the width)", group="student")
    embedding_dim: int | None = option(
        None, "ALBERT-style factorised embeddings: vocab×E then E×hidden, from a truncated SVD of the teacher's tables", group="student"
    )
    layer_groups: int | None = option(
        None, "ALBERT's cross-layer sharing: the student's layers run over this many layer modules, stored once (1: one "
        "module for every layer; must divide --student-layers); an ALBERT student, so with --embedding-dim (or an "
        "ALBERT teacher)", group="student", metavar="G",
    )  # fmt: skip
    student_family: str | None = option(
        None, "the student's family if not the teacher's (bert, distilbert, roberta, electra): the teacher re-laid "
        "into it, refused unless that is exact", group="student", metavar="FAMILY",
    )  # fmt: skip
    layer_map: list[int] | None = option(
        None, "teacher layer per student layer, e.g. 0,2,5 (default: evenly spaced)", group="student", type=str
    )
    alpha_mlm: float | None = option(None, "masked-LM cross-entropy weight (default: auto)", group="losses")
    alpha_ce: float | None = option(None, "soft-target KL weight (× T²)", group="losses")
    alpha_cos: float | None = option(None, "hidden-state cosine weight", group="losses")
    alpha_pooled: float | None = option(None, "pooled sentence-embedding cosine weight", group="losses")
    alpha_sim: float = option(
        ALPHA_SIM, "in-batch similarity weight: MSE between the student's and the teacher's cosine-similarity matrices "
        "of the pooled embeddings in a batch (not part of auto)", group="losses",
    )  # fmt: skip
    temperature: float = option(TEMPERATURE, "softmax temperature of the soft targets", group="losses")
    ce_positions: str = option("masked", "where soft targets are scored", group="losses", choices=CE_POSITIONS)
    cos_layers: str = option("last", "last layer, or every mapped layer", group="losses", choices=COS_LAYERS)
    mlm_probability: float | None = option(
        None, "share of tokens masked in the training text; 0 = unmasked (only with --alpha-mlm 0 --alpha-ce 0); "
        f"default: {MASKED_SHARE} when a masked-LM or soft-target loss is used, else 0", group="losses",
    )  # fmt: skip
    steps: int = option(1000, "optimizer steps", group="training")
    batch_size: int = option(32, "sequences per device per step", group="training")
    grad_accum: int = option(1, "gradient accumulation steps", group="training")
    seq_len: int = option(SEQ_LEN, "tokens per sequence", group="training")
    packing: str = option("truncate", "one passage per sequence, or packed", group="training", choices=PACKINGS)
    group_by_length: bool = option(
        False, "batch passages of similar length (less padding, faster steps on corpora of mixed lengths)", group="training"
    )
    lr: float = option(1e-4, "peak learning rate (linear warmup, linear decay)", group="training")
    warmup_ratio: float = option(0.05, "fraction of steps spent warming up", group="training")
    weight_decay: float = option(0.0, "AdamW weight decay", cli=False)
    max_grad_norm: float = option(5.0, "gradient clipping norm", cli=False)
    save_steps: int | None = option(None, "checkpoint interval (default: ~10 %% of steps)", group="training")
    eval_sts: str | None = option(None, "STS csv (sentence1,sentence2,score): periodic Spearman, keeps the best", group="training")
    eval_labels: str | None = option(
        None, "classifier teachers: labelled TSV (sentence<TAB>label with a header, SST-2 train format; a training "
        "split, never the dev set you report on): checkpoints are kept on accuracy on it (default: the last step)",
        group="training", metavar="FILE",
    )  # fmt: skip
    eval_steps: int | None = option(None, "evaluation interval (default: --save-steps)", group="training")
    logging_steps: int | None = option(None, "log interval", group="training")
    head_steps: int = option(200, "steps to fit a head-less teacher's MLM head (cached)", group="training")
    head_batch_size: int = option(32, "batch size of the teacher-head fit", cli=False)
    head_lr: float = option(1e-3, "learning rate of the teacher-head fit", cli=False)
    student_head_steps: int | None = option(
        None, "steps to fit a factorised student's MLM head before distilling (default: --head-steps; 0: off)", group="training"
    )
    max_passages: int | None = option(None, "use only the first N passages of the corpus", group="training")
    sentences: bool = option(
        False, "split text-file passages into sentences (tables' short STS/SST sentences stay as they are) and train "
        "on sentences", group="training",
    )  # fmt: skip
    teacher_cache: str | None = option(
        None, "cache the teacher's outputs for the corpus in DIR (pooled embeddings fp32, token states of the "
        "cosine layers fp16), computed once and reused by runs with the same teacher, text, seq-len, packing and "
        "layers; only for unmasked text (--alpha-mlm 0 --alpha-ce 0 --mlm-probability 0); default: off",
        group="training", metavar="DIR",
    )  # fmt: skip
    seed: int = option(42, "random seed", group="training")
    threads: int | None = option(None, "CPU threads for torch", group="training")
    weight_grid: str | None = option(
        None, "quantization-aware training: the student's Linear and embedding weights are seen on this runtime "
        "quantizer's 4-bit grid and saved on it, so `export --quantize int4` (or w4a8) to that target computes the student "
        "exactly (edgebert/weight_grids.py): onnx-int4, onnx-w4a8, executorch-int4, executorch-w4a8 or tflite-w4a8", group="student", metavar="GRID",
    )  # fmt: skip


@dataclass
class DistillConfig(DistillRecipe):
    """Every option of `edgebert distill` / `edgebert.distill(teacher, corpus, out, **options)`."""

    student_init: str | None = option(
        None, "start from this model dir (e.g. a pruned copy of the teacher) instead of building a student; same tokenizer "
        "and hidden size as the teacher (else --across-tokenizers), its own shape (pruned heads, FFN width) kept",
        group="student", metavar="DIR",
    )  # fmt: skip
    across_tokenizers: bool = option(
        False, "distil the teacher's sentence embeddings into --student-init, which may have another tokenizer and "
        "family (docs/distill.md#across-tokenizers)", group="student",
    )  # fmt: skip
    freeze_embeddings: bool = option(False, "do not train the embedding block (nor the MLM decoder tied to it)", group="student")
    precision: str = option("auto", "auto, fp32, fp16, bf16 (half precision needs a GPU)", group="training")
    resume: bool = option(False, "continue from the last checkpoint in --out", group="output")
    force: bool = option(False, "replace a non-empty --out", group="output")
    keep_checkpoints: bool = option(False, "keep --out/checkpoints after success", group="output")
    cache_dir: str | None = option(None, "where fitted teacher heads are cached (default ~/.cache/edgebert)", group="output")
    quiet: bool = option(False, "no progress messages", cli=False)
    callbacks: list[Any] | None = option(None, "extra transformers TrainerCallbacks", cli=False)


LOSS_OPTIONS = ("alpha_mlm", "alpha_ce", "alpha_cos", "alpha_pooled", "mlm_probability")
# The options that shape a new student; `student_init` takes its model as it is and refuses each of them.
STUDENT_SHAPE_OPTIONS = (
    "student_layers", "student_hidden", "student_heads", "student_ffn", "embedding_dim", "layer_groups", "student_head_steps",
    "student_family",
)  # fmt: skip


def auto_losses(
    given: dict[str, float | None], teacher_has_mlm_head: bool, classifier: bool = False
) -> tuple[dict[str, float], str]:
    """The loss weights and masking share for `given` (LOSS_OPTIONS; None = auto) and why: task distillation on the
    logits of a sequence-classifier teacher (`classifier`), DistilBERT's triple loss when the teacher has its own
    masked-LM head, cosine-only on unmasked text when it has neither. Given values win."""
    preset = TASK_LOSS if classifier else TRIPLE_LOSS if teacher_has_mlm_head else COSINE_ONLY
    chosen = {k: float(given[k]) if given.get(k) is not None else preset[k] for k in TRIPLE_LOSS}
    masks = chosen["alpha_mlm"] or (chosen["alpha_ce"] and not classifier)
    probability = given.get("mlm_probability")
    chosen["mlm_probability"] = float(probability) if probability is not None else MASKED_SHARE if masks else 0.0
    auto = [k for k in LOSS_OPTIONS if given.get(k) is None]
    if not auto:
        return chosen, "as given"
    if classifier:
        why = "task distillation: soft targets on the classifier teacher's logits plus hidden-state cosine, unmasked text"
    elif teacher_has_mlm_head:
        why = "DistilBERT's triple loss: the teacher has its own masked-LM head"
    else:
        why = "cosine-only on unmasked text: the teacher has no masked-LM head (a fitted one predicts poorly)"
    which = "auto" if len(auto) == len(LOSS_OPTIONS) else f"auto for {', '.join(auto)}"
    return chosen, f"{which}: {why}"


# ------------------------------------------------------------------------------------------------ compress


@dataclass
class CompressRecipe:
    """The `compress()` options a recipe's [compress] section may set."""

    prune_heads: float = option(0.0, "share of attention heads to remove, in [0, 1)", group="what to prune", metavar="F")
    head_scope: str = option(
        "global", "global: rank heads across layers (layer-normalised, every layer keeps >= 1); layer: the fraction per layer",
        group="what to prune", choices=HEAD_SCOPES,
    )  # fmt: skip
    prune_ffn: float = option(
        0.0, "share of FFN neurons to remove from every layer (each keeps its own best), in [0, 1)", group="what to prune", metavar="F"
    )
    ffn_scope: str = option(
        "layer", "only 'layer': a global FFN cut would give layers different widths, which stock classes cannot load", group="what to prune"
    )
    calibration: str | None = option(
        None, "text, one passage per line (.gz ok); required by --prune-heads/--prune-ffn", metavar="FILE"
    )  # default in a recipe: passages sampled from the corpus into the work dir
    calibration_samples: int = option(256, "passages used to rank units", metavar="N")
    importance: str = option(
        "auto", "loss for the gradient scores: the model's own masked-LM head (auto when present) or output sensitivity",
        choices=IMPORTANCE_METHODS,
    )  # fmt: skip
    seq_len: int = option(SEQ_LEN, "token length of calibration passages")
    batch_size: int = option(16, "passages per importance batch")
    seed: int = option(0, "random seed")


@dataclass
class CompressConfig(CompressRecipe):
    """Every option of `edgebert.compress(model, out, **options)` (the command adds healing and vocabulary flags)."""

    heads_to_prune: str | dict[Any, Any] | None = option(
        None, 'explicit heads instead of --prune-heads: JSON or a .json file, e.g. \'{"0": [1, 2]}\' (no calibration needed)',
        group="what to prune", metavar="JSON",
    )  # fmt: skip
    magnitude_sparsity: float = option(
        0.0, "zero the smallest-|w| share F of every encoder Linear weight, in [0, 1), applied last and saved dense: "
        "shrinks the zip/gzip-compressed size only, NOT the raw model.safetensors size and NOT latency",
        group="magnitude sparsity (optional; compressed size only)", metavar="F",
    )  # fmt: skip
    heal: HealConfig | None = option(None, "heal the pruned model (see HealConfig)", cli=False)
    force: bool = option(False, "replace a non-empty --out")
    quiet: bool = option(False, "no progress messages")


@dataclass
class HealConfig:
    """How to heal: `steps` optimizer steps of distillation on `corpus` (text files, .gz ok, or dataset names)."""

    steps: int = 0
    corpus: list[str] = field(default_factory=list)
    losses: str = DEFAULT_HEAL_LOSSES
    lr: float = 3e-4
    batch_size: int = 16
    seq_len: int | None = None  # None: compress's --seq-len
    freeze_embeddings: bool = True
    group_by_length: bool = True  # batches of similar length: 1.65x the steps/s on the development corpus mix
    cache_dir: str | None = None  # fitted teacher MLM heads, only when the mlm/ce losses are used

    def __post_init__(self) -> None:
        if isinstance(self.corpus, (str, Path)):  # one source given as such, not as a list
            self.corpus = [self.corpus]
        self.corpus = [str(c) for c in self.corpus]


@dataclass
class VocabConfig:
    """Vocabulary trimming (`edgebert compress --trim-vocab`, a recipe's [vocab])."""

    min_count: int = 1  # keep corpus tokens used at least this often
    max_size: int | None = None  # cap on the vocabulary (most frequent first)


# -------------------------------------------------------------------------------------------------- export


@dataclass
class ExportRecipe:
    """The `export()` options a recipe's [export] section may set (for every target)."""

    # One 128 bucket until the bucketed default is timed on a quiet machine: `--seq-len 16,32,64,128`.
    seq_len: int | list[int] = option(
        SEQ_LEN, "token length; a list (16,32,64,128) gives tflite/tfjs one static graph per length, verified each, and "
        "the app pads to the smallest that fits (onnx: dynamic axes, the largest is the truncation length)",
        action="int_list",
    )  # fmt: skip
    min_cosine: float | None = option(None, "parity tolerance override")
    buckets: bool = option(
        False, f"tflite/tfjs: one graph per length of {','.join(map(str, DEFAULT_BUCKETS))} below --seq-len, plus "
        "--seq-len itself (short texts pay for their own length; onnx: dynamic axes, nothing to do)",
    )  # fmt: skip


@dataclass
class ExportConfig(ExportRecipe):
    """Every option of `edgebert export` / `edgebert.export(target, model, out, **options)`."""

    quantize: str = option("none", "onnx: int8, int8-static, int4, w4a8, fp16; tflite: int8, int8-static, int4, w4a8, fp16; tfjs: uint8, float16; executorch: int8, int4, w4a8")
    task: str | None = option(
        None, "what the export computes (default: detected from the model dir); feature-extraction on a classifier or "
        "fill-mask model ships only its encoder's sentence embeddings, without the head",
    )  # fmt: skip
    top_k: int = option(5, "fill-mask exports: the k best token ids and their softmax scores per token, computed in the graph")
    calibration: str | None = option(
        None, "text, one passage per line (.gz ok): activation ranges for --quantize int8-static", metavar="FILE"
    )
    input_dtype: str | None = option(
        None, "the ids' integer type: onnx takes int64 (default) or int32 (Hermes / onnxruntime-react-native apps "
        "without BigInt64Array); tflite and tfjs take int32, executorch int64", metavar="DTYPE",
    )  # fmt: skip
    layout: str = option(
        "edgebert", "onnx: transformers.js also lays the export out as transformers.js's pipeline() loads it (the one "
        "ONNX file as onnx/model.onnx, onnx/model_quantized.onnx for int8, …; a config.json; the tokenizer cut at "
        "--seq-len), which edgebert's own runtimes read as well", choices=LAYOUTS,
    )  # fmt: skip
    calibration_texts: list[str] | None = option(None, "calibration sentences instead of a file", cli=False)
    calibration_samples: int | None = option(None, f"passages of --calibration to use (default {DEFAULT_CALIBRATION_SAMPLES})")
    tfjs_batched_attention_max_len: int = option(
        TFJS_BATCHED_ATTENTION_MAX_LEN, "tfjs: graphs (buckets) of at most this many tokens compute attention batched over "
        "heads (fewer ops: faster on short inputs), longer ones one 2-D product per head (faster on long inputs in the "
        "wasm backend); 0: per head everywhere; the manifest records each bucket's choice", metavar="N",
    )  # fmt: skip
    force: bool = option(False, "replace a non-empty --out")
    quiet: bool = option(False, "no progress messages", cli=False)


# ------------------------------------------------------------------------------------------------ finetune

FINETUNE_LOSSES = ("auto", "cosent", "angle", "mnrl")
HELD_OUT_SHARE = 0.1  # finetune's held-out slice when neither --held-out nor --held-out-file is given


@dataclass
class FinetuneRecipe:
    """The `finetune()` options a recipe's [finetune] section may set. The training values are sentence-transformers'
    STS-B training example's (4 epochs, batch 16, lr 2e-5, 10 % warmup) with AdamW weight decay 0.01."""

    sentence1_column: str = option("sentence1", "the column of the first sentence (the anchor of a pair)", group="data", metavar="NAME")
    sentence2_column: str = option("sentence2", "the column of the second sentence (the positive of a pair)", group="data", metavar="NAME")
    score_column: str | None = option(
        None, "the column of similarity scores, any numbers, higher = more similar (only their order matters to the "
        "losses and to Spearman); default: `score` when the file has one", group="data", metavar="NAME",
    )  # fmt: skip
    negative_column: str | None = option(
        None, "the column of a negative per row (anchor, positive, negative triplets; mnrl only)", group="data", metavar="NAME"
    )
    header: str | None = option(
        None, "CSV/TSV without a header row: these comma-separated names name its columns, e.g. sentence1,sentence2,score "
        "for STS-B's csv (default: the first row is the header)", group="data", metavar="NAMES",
    )  # fmt: skip
    held_out: float | None = option(
        None, f"share of --data's rows held out to choose the epoch or soup kept, picked by a hash of each row's text "
        f"(the same rows whatever their order); 0: train on every row, keep the last epoch (or --soup-from's soup); "
        f"default: {HELD_OUT_SHARE}, none with --held-out-file", group="data", metavar="F",
    )  # fmt: skip
    held_out_file: str | None = option(
        None, "rows in --data's format to choose on instead of a slice (their pairs found in --data are not trained on)",
        group="data", metavar="FILE",
    )  # fmt: skip
    loss: str = option(
        "auto", "cosent or angle learn from scored pairs; mnrl (in-batch negatives) from unscored pairs or triplets; "
        "auto: cosent with a score column, mnrl without", group="training", choices=FINETUNE_LOSSES,
    )  # fmt: skip
    epochs: int = option(4, "passes over the training rows; the weights after each epoch are a candidate", group="training")
    batch_size: int = option(16, "rows per step (mnrl: a row's in-batch negatives are the other rows' positives)", group="training")
    lr: float = option(2e-5, "peak learning rate (linear warmup, linear decay)", group="training")
    warmup_ratio: float = option(0.1, "fraction of steps spent warming up", group="training")
    weight_decay: float = option(0.01, "AdamW weight decay", group="training")
    seq_len: int | None = option(None, "tokens per sentence in training (default: the model's max_seq_length)", group="training")
    seeds: list[int] = option(
        [0], "train once per seed (data order, dropout) from the same start; every candidate averages the seeds' weights "
        "(a seed soup)", group="training", action="int_list",
    )  # fmt: skip
    soup_from: int | None = option(
        None, "with --held-out 0: keep the uniform average of epochs K..--epochs instead of the last epoch",
        group="training", metavar="K",
    )  # fmt: skip
    refit: bool = option(
        False, "after the held-out rows choose the epoch or soup, train again from the start on every row of --data "
        "(the held-out ones too) for that many epochs and keep the same epoch or soup: the choice made on held-out "
        "rows, the model trained on all of them", group="training",
    )  # fmt: skip


@dataclass
class FinetuneConfig(FinetuneRecipe):
    """Every option of `edgebert finetune` / `edgebert.finetune(model, data, out, **options)`."""

    force: bool = option(False, "replace a non-empty --out", group="output")
    quiet: bool = option(False, "no progress messages", cli=False)


# --------------------------------------------------------------------------------------------------- bench


@dataclass
class BenchRecipe:
    """The `bench()` options a recipe's [bench] section may set."""

    sts: str | None = option(None, "STS-B style CSV (sentence1,sentence2,score 0-5) for Spearman", group="accuracy")
    sts_limit: int | None = option(None, "use only the first N pairs (default: all)", group="accuracy")
    sts_limit_for: dict[str, int] = option(
        {}, "fewer STS pairs for one target (e.g. tfjs=200: slow runtimes); retention uses the same pairs",
        group="accuracy", metavar="TARGET=N", action="target_limits",
    )  # fmt: skip
    sst2: str | None = option(
        None, "labelled sentences for classifiers: a TSV with a header sentence<TAB>label (SST-2's train/dev format) or a "
        "dataset such as glue/sst2:validation; accuracy in every runtime and agreement with the reference",
        group="accuracy", metavar="FILE",
    )  # fmt: skip
    sst2_limit: int | None = option(1000, "use only the first N labelled rows", group="accuracy")
    seq_len: list[int] = option([128], "token lengths", group="latency", action="int_list")
    batch: list[int] = option([1], "batch sizes", group="latency", action="int_list")
    threads: list[int] = option([1], "CPU threads", group="latency", action="int_list")
    warmup: int = option(5, "untimed calls before timing", group="latency")
    repeats: int = option(30, "timed calls per configuration", group="latency")
    torch_int8: bool = option(False, "add a PyTorch dynamic-int8 twin of every model dir", group="items")
    timeout: float | None = option(None, "seconds per item before it is marked failed", group="run")
    in_process: bool = option(False, "no worker process per item (debugging; memory is approximate)", group="run")


@dataclass
class BenchConfig(BenchRecipe):
    """Every option of `edgebert bench` / `edgebert.bench(items, out, **options)`."""

    texts: str | None = option(
        None, "texts (one per line, .gz ok) for the app-like latency: tokenizer + model per text at its own length, "
        "static exports padded to their longest length and to the smallest bucket (default: the --sts sentences)",
        group="latency", metavar="FILE",
    )  # fmt: skip
    texts_limit: int = option(200, "texts timed one at a time for the app-like latency (0: none)", group="latency")
    reference: str | None = option(
        None, "the ITEM (or label) others are compared to (default: the first); 'parent': each export against the model "
        "dir it was exported from (added to the run if missing)", group="accuracy",
    )
    tokenizer: str | None = option(None, "tokenizer dir for bare .onnx/.tflite files", group="items")
    pooling: str = option("mean", "pooling for bare files without a sentence_embedding output", group="items")
    force: bool = option(False, "replace a non-empty --out", group="run")
    quiet: bool = option(False, "no progress messages", cli=False)


# ------------------------------------------------------------------------------------------------ pipeline


@dataclass
class PipelineConfig:
    """The run options of `edgebert pipeline` / `edgebert.pipeline(recipe, out, **options)` (the recipe holds the rest)."""

    work: str | None = option(None, "where the stages write (default: <OUT>.work)", group="run")
    resume: bool = option(False, "skip finished stages; continue distillation from its checkpoint", group="run")
    force: bool = option(False, "start over in --work and replace a non-empty --out", group="run")
    corpus: list[str] | None = option(
        None, "distillation text: files (.gz ok), dirs, STS-B csv, SST-2 tsv, datasets (required unless the recipe names it)",
        group="data", nargs="+",
    )  # fmt: skip
    eval_sts: str | None = option(None, "STS pairs to keep the best checkpoint on, e.g. glue/stsb:train", group="data")
    sts: str | None = option(None, "STS pairs the bench scores retention on, e.g. glue/stsb:validation", group="data")
    sst2: str | None = option(None, "SST-2 sentences added to the corpus (tsv or glue/sst2:train)", group="data")
    finetune_data: str | None = option(
        None, "labelled pairs (csv, tsv, jsonl or a dataset) for a finetune stage on the final student, before the "
        "exports, with the recipe's [finetune] options (replaces [finetune] data)", group="data", metavar="FILE",
    )  # fmt: skip
    labels: str | None = option(
        None, "classifier teachers: labelled sentences the bench scores accuracy on, e.g. glue/sst2:validation or a "
        "sentence<TAB>label tsv (overrides the recipe's [bench] sst2)", group="data",
    )  # fmt: skip
    eval_labels: str | None = option(
        None, "classifier teachers: a labelled train split to keep the best checkpoint on (overrides [distill] eval_labels)",
        group="data",
    )  # fmt: skip
    steps: int | None = option(None, "distillation steps (overrides the recipe's distill.steps)", group="overrides")
    teacher: str | None = option(None, "teacher dir or hub id (overrides the recipe's teacher)", group="overrides")
    redistill_teacher: str | None = option(
        None, "the second teacher's dir or hub id (overrides [redistill] teacher; a recipe without the section gets one "
        "with distill's defaults)", group="overrides", metavar="MODEL",
    )  # fmt: skip
    cache_dir: str | None = option(None, "where fitted teacher MLM heads are cached (default ~/.cache/edgebert)", group="overrides")
    quiet: bool = option(False, "only the final summary", group="overrides")
