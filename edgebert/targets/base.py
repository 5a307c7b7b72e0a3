"""The interface every export target implements, and the runner that executes its artifact."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgebert.config import SEQ_LEN, TFJS_BATCHED_ATTENTION_MAX_LEN
from edgebert.modelio import LoadedModel

OUTPUT_NAMES = ("sentence_embedding", "last_hidden_state")
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


# Float islands of the dynamic int8 recipes (ONNX int8, TFLite int8), tried in order: the first whose model stays at
# least RECIPE_MIN_COSINE close to its reference on the guard texts (`edgebert.parity.guard_inputs`, every kernel
# path) is kept; the last is kept anyway and the parity check decides. The FFN down-projections (post-GELU outliers,
# Bondarenko et al. 2021) always compute in float. Over a few hundred varied texts the default teacher needs the FFN
# up-projections and the query/key/value projections in float too: its one-word texts lose most under dynamic int8
# (benchmarks/README.md, "Parity over a few hundred texts"); the 3-layer students may not.
INT8_FLOAT_ISLANDS: tuple[tuple[str, ...], ...] = (
    ("ffn_output",),
    ("ffn_output", "ffn_input"),
    ("ffn_output", "ffn_input", "query", "key", "value"),
)
# The 4-bit recipes try no island first: a model trained on the runtime's 4-bit grid (edgebert.weight_grids) needs
# none, its weights being grid points. Any other model tries them as int8 does, and is refused unless one holds.
INT4_FLOAT_ISLANDS: tuple[tuple[str, ...], ...] = ((), *INT8_FLOAT_ISLANDS)
# The parity threshold of 8-bit recipes (0.99) plus a margin: the parity check on other texts follows.
RECIPE_MIN_COSINE = 0.9925
# A target that stores its float islands' weights at 8 bits (TFLite: weight-only int8) keeps them so only while that
# leaves at most this many times the drift (1 - guard min cosine) of the same islands with float16 weights, or a drift
# this small anyway. Measured with TFLite's islands (FFN and q/k/v, AMD EPYC): all-MiniLM-L6-v2 1.4x (int8 kept);
# all-mpnet-base-v2 6.7x (float16: its int8 island weights put a three-token parity text at 0.9894 with every Linear
# computing in float, while its guard texts held at 0.9937).
ISLAND_INT8_MAX_DRIFT_RATIO = 2.0
ISLAND_INT8_NEGLIGIBLE_DRIFT = 1e-3


GUARD_CHUNK = 16  # guard feeds per `Runner.run_many` call while a failing rung may stop early


def guard_min_cosine(
    runner: Runner, guard: Sequence[dict[str, np.ndarray]], reference: Sequence[dict[str, np.ndarray]], stop_below: float | None = None
) -> float:
    """The worst similarity of the runner's outputs (`Runner.run_many`) to their reference over the guard feeds
    (`edgebert.parity.compare`): what a recipe's float-island ladder climbs on.

    `stop_below`: the caller only needs to know whether the worst is below it (a rung that is not the last, whose
    figure is not kept when it fails): the feeds run shortest first (the one-word texts lose most under 8 bits, and
    cost least), a chunk at a time, and the first chunk whose worst is below it ends the measure with that value. A
    rung that holds runs every feed, so the figure it records is the full minimum either way."""
    from edgebert.parity import compare

    order = sorted(range(len(guard)), key=lambda i: guard[i]["attention_mask"].sum())
    step = GUARD_CHUNK if stop_below is not None else max(len(order), 1)
    worst = 1.0
    for start in range(0, len(order), step):
        chunk = order[start : start + step]
        outputs = runner.run_many([guard[i] for i in chunk])
        worst = min(worst, *(compare(reference[i], got, guard[i]["attention_mask"], RECIPE_MIN_COSINE).min_cosine
                             for i, got in zip(chunk, outputs)))  # fmt: skip
        if stop_below is not None and worst < stop_below:
            break
    return float(worst)


def int8_island_weights_hold(int8_cosine: float, float16_cosine: float) -> bool:
    """Whether 8-bit island weights keep what the float islands are for: the recipe holds (`RECIPE_MIN_COSINE`) and
    their drift stays within `ISLAND_INT8_MAX_DRIFT_RATIO` of float16 weights' (or under `ISLAND_INT8_NEGLIGIBLE_DRIFT`)."""
    drift, float_drift = 1.0 - int8_cosine, 1.0 - float16_cosine
    allowed = max(ISLAND_INT8_MAX_DRIFT_RATIO * float_drift, ISLAND_INT8_NEGLIGIBLE_DRIFT)
    return int8_cosine >= RECIPE_MIN_COSINE and drift <= allowed


def guard_record(guard: Sequence[Any], worst: float) -> dict[str, Any]:
    """The manifest's `guard` entry of a recipe: how many texts, the worst cosine on them, what was required."""
    return {"texts": len(guard), "min_cosine": round(float(worst), 6), "required": RECIPE_MIN_COSINE}


@dataclass(frozen=True)
class ExportOptions:
    """What the user asked of an export."""

    seq_len: int = SEQ_LEN  # the longest input (static targets: the largest bucket)
    quantize: str = "none"
    calibration_texts: tuple[str, ...] = ()
    buckets: tuple[int, ...] = ()  # static-shape targets: one graph (signature) per length; () = (seq_len,)
    tfjs_batched_attention_max_len: int = TFJS_BATCHED_ATTENTION_MAX_LEN  # tfjs: batched attention up to this length
    input_dtype: str = ""  # the ids' integer type; "" = the target's first `input_dtypes`
    layout: str = "edgebert"  # where the files go: one of the target's `layouts`

    @property
    def lengths(self) -> tuple[int, ...]:
        """The sequence-length buckets, ascending (the one `seq_len` when none were asked for)."""
        return tuple(sorted(self.buckets)) or (self.seq_len,)


@dataclass
class ConvertResult:
    """What `Exporter.convert` produced: the files an app ships (relative names) and target facts."""

    files: list[str]
    input_dtype: str  # "int32" or "int64"
    static_shape: bool  # True: inputs are [1, seq_len]; False: [batch, sequence] dynamic
    extra: dict[str, Any] = field(default_factory=dict)
    buckets: dict[int, dict[str, Any]] = field(default_factory=dict)  # static targets: {length: how to run it}


class Runner(ABC):
    """Runs an exported artifact in its own runtime on a batch of int64 numpy inputs."""

    @abstractmethod
    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Map `input_ids`/`attention_mask`/`token_type_ids` [B, T] to the export's named outputs (its manifest's
        `outputs`): `sentence_embedding` and `last_hidden_state`, or the task's (`logits`; `top_ids`, `top_scores`)."""

    def run_many(self, feeds: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
        """`run` on each feed, each as an app runs it alone (runners that can share the work out override it)."""
        return [self.run(feed) for feed in feeds]

    def time_calls(self, inputs: dict[str, np.ndarray], warmup: int, repeats: int) -> list[float]:
        """Seconds per `run(inputs)` call after `warmup` untimed calls (runtimes may time natively)."""
        for _ in range(warmup):
            self.run(inputs)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            self.run(inputs)
            times.append(time.perf_counter() - start)
        return times

    def time_texts(self, texts: list[str], runs: list[tuple[str, list[int]]], warmup: int) -> dict[str, Any] | None:
        """Tokenize and run each text in the runtime's own language, as its apps do: {"tokenizer": what tokenized,
        "ids": each text's real token ids, "times": {mode: {"tokenize_s": [...], "model_s": [...]}}} (per text, in
        text order), timed in `runs` ((mode, text indices) in order, each opened by an untimed call; modes "fixed",
        "buckets": `edgebert.bench.app_latency.schedule`). None: apps of this runtime tokenize where the bench does
        (Python)."""
        return None

    def close(self) -> None:
        """Release runtime resources (subprocesses, sessions)."""


@dataclass
class KernelPath:
    """One way the artifact's arithmetic can run (a CPU's kernels, a runtime's op resolver) and a runner for it; or,
    when `proof` shows that it computes exactly what the path `same_as` computes on every input, no runner: that
    path's figures are its own."""

    description: str
    runner: Runner | None
    same_as: str | None = None
    proof: str | None = None
    texts: int | None = None  # rows of each parity check it runs (None: all; emulated paths run a sample)


def runnable(paths: dict[str, KernelPath]) -> dict[str, KernelPath]:
    """The paths that must be run (those not proved equal to another)."""
    return {name: path for name, path in paths.items() if path.runner is not None}


class Exporter(ABC):
    """One export target: converts a loaded model into files and runs them back for verification."""

    name: ClassVar[str]
    quantizations: ClassVar[tuple[str, ...]]  # besides "none"
    input_dtypes: ClassVar[tuple[str, ...]]  # the ids' integer types it can take, its default first
    layouts: ClassVar[tuple[str, ...]] = ("edgebert",)  # the file layouts it writes (config.LAYOUTS), its default first
    arm64_recipes: ClassVar[tuple[str, ...]] = ()  # recipes whose integer kernels differ on ARM64 CPUs
    install_hint: ClassVar[str]

    @abstractmethod
    def check_available(self) -> None:
        """Raise `TargetUnavailable` with an install hint when the target's toolchain is missing."""

    def warm_up(self) -> AbstractContextManager[None]:
        """For the export's duration: what the conversion starts ahead, beside the model's loading and capture (a
        TensorFlow process importing TensorFlow); nothing by default."""
        return nullcontext()

    @abstractmethod
    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        """Write the target's files into `work_dir` (scratch space beside it is the exporter's own)."""

    @abstractmethod
    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        """A runner for the artifact in `export_dir` described by `manifest` (its `edgebert.json`)."""

    def arm64_unchecked(self, manifest: dict[str, Any]) -> str | None:
        """Why the artifact's ARM64 kernels are not among its kernel paths (one line), or None: checked, or a recipe
        whose arithmetic does not depend on the CPU's integer instructions."""
        if manifest["quantization"] not in self.arm64_recipes:
            return None
        from edgebert import arm64

        return arm64.unavailable()

    def arm64_runs(self, manifest: dict[str, Any]) -> bool:
        """Whether the artifact's ARM64 kernel paths are run here: an integer recipe, and nothing stops them."""
        return manifest["quantization"] in self.arm64_recipes and self.arm64_unchecked(manifest) is None

    def kernel_paths(self, export_dir: Path, manifest: dict[str, Any]) -> dict[str, KernelPath]:
        """Every kernel path the artifact may meet on the machines it runs on, each with a runner here.

        Parity is checked on each: a file that would drift on another CPU must fail on this one too. The
        default is the host's runtime alone (targets whose arithmetic does not depend on the CPU).
        """
        return {"host": KernelPath("this machine's runtime", self.load_runner(export_dir, manifest))}


def named_output(name: str, value: Any) -> np.ndarray:
    """An output as the Runner contract has it: float32, except integer ids (fill-mask's `top_ids`: int32)."""
    array = np.asarray(value)
    return array.astype(np.int32) if np.issubdtype(array.dtype, np.integer) else array.astype(np.float32)


def embedding_outputs(outputs: dict[str, np.ndarray], mask: np.ndarray, pooling: str) -> dict[str, np.ndarray]:
    """`sentence_embedding` when a bare model file has it, else pool + normalise its rank-3 output (hidden states).

    For model files edgebert did not export (bench's bare-file items): edgebert's own exports carry the pooled,
    normalised output and never come here."""
    if "sentence_embedding" in outputs:
        emb = np.asarray(outputs["sentence_embedding"], dtype=np.float32)
        hidden = outputs.get("last_hidden_state")
    else:
        hidden = outputs.get("last_hidden_state")
        if hidden is None:
            hidden = next((v for v in outputs.values() if np.ndim(v) == 3), None)
        if hidden is None:
            raise ValueError(f"the model has no sentence_embedding or [batch, tokens, hidden] output (outputs: {sorted(outputs)})")
        hidden = np.asarray(hidden, dtype=np.float32)
        m = mask[:, : hidden.shape[1], None].astype(np.float32)
        if pooling == "cls":
            emb = hidden[:, 0]
        elif pooling == "max":
            emb = (hidden + (1.0 - m) * -1e9).max(axis=1)
        else:
            emb = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=-1, keepdims=True), 1e-12)
    result = {"sentence_embedding": emb.astype(np.float32)}
    if hidden is not None:
        result["last_hidden_state"] = np.asarray(hidden, dtype=np.float32)
    return result
