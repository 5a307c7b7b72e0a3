"""The ARM64 kernel path: aarch64 onnxruntime, LiteRT and ExecuTorch under qemu user-mode emulation, proved right
before use.

Phones are ARM64, and each runtime picks its int8 kernels by the CPU's features (NEON, dot product, i8mm, SVE), so
x86 results say nothing about them. `scripts/install_arm64.sh` puts into `home()` a pinned qemu >= 10
`qemu-aarch64`, a minimal Debian bookworm arm64 root with Python 3.11, and the aarch64 wheels of numpy, onnxruntime
and ai-edge-litert (the versions of the repo's constraints.txt), and ExecuTorch's aarch64 runtime libraries with a C
interface the child loads by ctypes (`executorch_library`). Then:

- `run_child` runs an aarch64 Python script on one emulated CPU model (`CPU_MODELS`);
- `run_jobs` runs models on rows through `arm64_child.py` (onnxruntime, LiteRT or ExecuTorch, one thread) and returns every
  output, with the start-up, load and per-row times;
- `self_test` proves, on each CPU model, that the emulator computes the int8 products exactly and the fp32 ones to
  1e-5 (Debian 12's qemu 7.2 did not: with `-cpu max` an int8 ONNX model's cosine fell to 0.579, and these
  onnxruntime / LiteRT wheels crash under it); its verdict is cached in `home()` for this emulator, root and wheels;
- `available()` is None when all of that holds, else the one-line reason.

`python -m edgebert.arm64 [info | selftest [--force] [--cpu MODEL ...]]` prints the state or runs the self-test.
Nothing heavy is imported with this module: numpy, onnx and LiteRT are imported by the functions that need them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

QEMU_MIN = (10, 0)  # Debian 12's qemu 7.2 miscomputes int8 on -cpu max (and crashes these wheels); 10.0 is right
ROOTFS = "rootfs"  # under home(): the arm64 Debian root (qemu's -L)
PYTHON = "usr/bin/python3.11"  # in the root
SITE = "opt/edgebert/site"  # in the root: the aarch64 wheels (pip --target), the child's PYTHONPATH
CHILD = Path(__file__).resolve().with_name("arm64_child.py")
INSTALLER = "scripts/install_arm64.sh"
TEXTS_ENV = "EDGEBERT_ARM64_TEXTS"  # parity texts per check of each ARM64 kernel path (`texts`)

# The qemu -cpu models that edgebert checks: one per int8 kernel family that phones run.
CPU_MODELS: dict[str, str] = {
    "cortex-a53": "Armv8.0 NEON, no dot product: low-end and older phones (the runtimes' baseline NEON kernels)",
    "cortex-a76": "Armv8.2 NEON + dot product (sdot/udot), no i8mm: most Android big cores of 2019-2022",
    "cortex-a710": "Armv9.0: dot product + i8mm (smmla/usmmla) + SVE2 at 128 bits + bf16: phone big cores since 2022",
    "max": "every feature qemu implements (i8mm, SVE2 at 512 bits, SME): the model qemu 7.2 "
    "miscomputes",
}

SELFTEST_VERSION = 1  # bump when the self-test's case or rules change: the cached verdicts then no longer apply
FP32_RTOL = 1e-5  # fp32 products: max |emulated - float64 reference| / max |reference|
SEED = 20250601
# The ONNX case: [M, K] @ [K, N] at a BERT-base FFN's shape, plus a ragged one for the kernels' edge handling.
M, K, N = 64, 384, 1536
TAIL_M, TAIL_K, TAIL_N = 7, 131, 37
LITERT_KERNELS = ("xnnpack", "builtin")
# The int8 weights span [-127, 127], as symmetric quantizers write them (onnxruntime's, TFLite's per-channel ones):
# onnxruntime's NEON kernel for CPUs without dot product (MLAS QgemmS8S8KernelNeon; u8 activations are flipped to
# s8 for it) adds two s8 x s8 products in int16 (smull + smlal) before widening, which wraps when both are
# (-128) x (-128) = 16384. That is the kernel's design, not the emulator's error, and a -128 weight is needed for it.
WEIGHT_MAX = 127


class ChildError(RuntimeError):
    """An emulated child failed or timed out; the message is one line (its last error line)."""


# ---------------------------------------------------------------------------------------------------------- paths


def home() -> Path:
    """Where the ARM64 path is installed: $EDGEBERT_ARM64_HOME, else `.arm64` in the repo checkout that holds this
    package (where install_arm64.sh puts it: next to `.venv`), else `.arm64` next to the running environment."""
    env = os.environ.get("EDGEBERT_ARM64_HOME")
    if env:
        return Path(env).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / INSTALLER).is_file():
        return checkout / ".arm64"
    return Path(sys.prefix).resolve().parent / ".arm64"


def emulator() -> Path:
    """The `qemu-aarch64` used: $EDGEBERT_ARM64_QEMU (to try another build), else the installed one."""
    env = os.environ.get("EDGEBERT_ARM64_QEMU")
    return Path(env).expanduser().resolve() if env else home() / "bin" / "qemu-aarch64"


def rootfs() -> Path:
    """The arm64 Debian root: qemu's `-L`, holding the aarch64 Python and the site directory."""
    return home() / ROOTFS


def site_dir() -> Path:
    """The aarch64 wheels' directory (the child's PYTHONPATH)."""
    return rootfs() / SITE


def executorch_library() -> Path:
    """edgebert's C interface to ExecuTorch's aarch64 runtime (beside the runtime's libraries), which the child loads
    with ctypes."""
    return home() / "executorch" / "lib" / "libedgebert_et.so"


def _executorch_stamp() -> Path:
    """What install_arm64.sh wrote beside ExecuTorch's aarch64 runtime ("executorch 1.5.1 source:<sha256>")."""
    return executorch_library().parents[1] / ".edgebert-executorch"


def executorch_problem() -> str | None:
    """Why ExecuTorch programs cannot run in the emulated child (one line), or None."""
    if not executorch_library().is_file() or not _executorch_stamp().is_file():
        return f"no ExecuTorch aarch64 runtime in {executorch_library().parents[1]} (run {INSTALLER})"
    return None


def executorch_version() -> str:
    """The executorch release whose aarch64 runtime is installed (from its stamp)."""
    stamp = _executorch_stamp().read_text().split()
    return stamp[1] if len(stamp) > 1 else "?"


# --------------------------------------------------------------------------------------------------- the emulator


@functools.lru_cache(maxsize=8)
def _version_of(path: str, stamp: float) -> str:
    del stamp  # part of the cache key only: a replaced binary is asked again
    try:
        first = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ChildError(f"{path} does not run: {error}") from None
    match = re.search(r"version (.+)", first[0]) if first else None
    if not match:
        raise ChildError(f"{path} --version printed no version")
    return match.group(1).strip()


def emulator_version() -> str:
    """The emulator's version as it prints it, e.g. `10.0.13 (Debian 1:10.0.13+ds-0+deb13u1)`; ChildError when it
    is missing or does not run."""
    path = emulator()
    if not path.is_file():
        raise ChildError(f"no emulator: {path} is missing (run {INSTALLER})")
    return _version_of(str(path), path.stat().st_mtime)


def version_tuple(version: str) -> tuple[int, ...]:
    """(10, 0, 13) from `10.0.13 (Debian ...)`."""
    match = re.match(r"(\d+(?:\.\d+)*)", version)
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


@functools.lru_cache(maxsize=16)
def _sha256(path: str, stamp: float, size: int) -> str:
    del stamp, size
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_sha256(path: Path) -> str:
    stat = path.stat()
    return _sha256(str(path), stat.st_mtime, stat.st_size)


def _missing_files() -> str | None:
    """A one-line reason when the emulator, the root's Python or the wheels are missing, else None."""
    if not emulator().is_file():
        return f"no emulator: {emulator()} is missing (run {INSTALLER})"
    if not (rootfs() / PYTHON).is_file():
        return f"no arm64 rootfs: {rootfs() / PYTHON} is missing (run {INSTALLER})"
    for package in ("numpy", "onnxruntime", "ai_edge_litert"):
        if not (site_dir() / package).is_dir():
            return f"no aarch64 {package} in {site_dir()} (run {INSTALLER})"
    return None


def install_problem() -> str | None:
    """What keeps the ARM64 path from running (a one-line reason), without running the self-test; None when the
    emulator (qemu >= 10), the root and the wheels are all there."""
    missing = _missing_files()
    if missing:
        return missing
    try:
        version = emulator_version()
    except ChildError as error:
        return str(error)
    if version_tuple(version) < QEMU_MIN:
        return (
            f"qemu {version} is too old: the ARM64 path needs qemu >= {'.'.join(map(str, QEMU_MIN))} "
            "(qemu 7.2 miscomputes int8 on -cpu max)"
        )
    return None


def available() -> str | None:
    """None when the ARM64 path can be trusted: installed (`install_problem`) and its self-test passes on every
    CPU model (cached after the first run); else a one-line reason."""
    problem = install_problem()
    if problem:
        return problem
    try:
        verdict = self_test()
    except (ChildError, ImportError, OSError) as error:
        return f"the self-test could not run: {error}"
    if verdict["ok"]:
        return None
    failed = [cpu for cpu, result in verdict["cpus"].items() if not result["ok"]]
    first = verdict["cpus"][failed[0]]["problems"][0]
    return f"self-test failed on {', '.join(failed)}: {first}"


def texts() -> int:
    """Parity texts per check of each ARM64 kernel path: $EDGEBERT_ARM64_TEXTS, else `config.ARM64_TEXTS` (0: the
    paths are off)."""
    from edgebert.config import ARM64_TEXTS

    value = os.environ.get(TEXTS_ENV, "").strip()
    if not value:
        return ARM64_TEXTS
    if not value.isdigit():
        from edgebert.errors import UserError

        raise UserError(f"{TEXTS_ENV}={value!r} is not a count of texts; use 0 (off) or a positive integer")
    return int(value)


def unavailable() -> str | None:
    """Why the ARM64 kernel paths are not run here (one line), or None when they are."""
    if texts() == 0:
        return f"{TEXTS_ENV}=0"
    problem = available()
    return None if problem is None else f"{problem} (install it: {INSTALLER})"


# ------------------------------------------------------------------------------------------------------ children


def guest_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The emulated child's environment: a clean one (no host PYTHON*, LD_* or QEMU_* settings), the wheels on
    PYTHONPATH, one thread, no bytecode written into the root."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "TMPDIR": tempfile.gettempdir(),
        "PYTHONPATH": str(site_dir()),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    env.update(extra or {})
    return env


def child_command(script: Path, args: list[str], cpu: str) -> list[str]:
    """`qemu-aarch64 -cpu CPU -L ROOT ROOT/usr/bin/python3.11 SCRIPT ARGS...`."""
    root = rootfs()
    return [str(emulator()), "-cpu", cpu, "-L", str(root), str(root / PYTHON), str(script), *map(str, args)]


def run_child(
    script: Path, args: list[str], cpu: str, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run the aarch64 Python script `script` with `args` on the emulated CPU model `cpu` (a `CPU_MODELS` key or
    any qemu -cpu value); stdout and stderr captured as text, nothing on stdin. subprocess.TimeoutExpired after
    `timeout` seconds; `env` adds to `guest_env()`."""
    missing = _missing_files()
    if missing:
        raise ChildError(missing)
    return subprocess.run(
        child_command(script, args, cpu),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        env=guest_env(env),
    )


def last_error_line(stderr: str) -> str:
    """The child's `arm64_child: error:` line, else its last non-empty stderr line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    marked = [line for line in lines if line.startswith("arm64_child: error:")]
    return (marked or lines or ["(no stderr)"])[-1]


RUNTIMES = ("onnxruntime", "litert", "executorch")


@dataclass
class Job:
    """One model run on rows in the emulated child: `runtime` one of `RUNTIMES`; each row a dict of input
    name -> array (rows may differ in shape); LiteRT's `kernels` "xnnpack" (its default delegate) or "builtin", and
    its `signature` (one for all rows, one per row, or None: serving_default when the model has it, else its input
    tensors by name); ExecuTorch's `names` (the program's inputs, fed as int64 in this order, and its outputs)."""

    model: Path
    runtime: str
    rows: list[dict[str, np.ndarray]]
    threads: int = 1
    kernels: str = "xnnpack"
    signature: str | list[str | None] | None = None
    repeat: int = 1
    names: tuple[list[str], list[str]] | None = None  # ExecuTorch: the program's input and output names, in order


@dataclass
class JobResult:
    """A job's outputs (one dict per row) and times: the runtime's import, the model's load, each row's runs."""

    outputs: list[dict[str, np.ndarray]]
    import_s: float
    load_s: float
    row_s: list[list[float]]
    version: str


@dataclass
class ChildRun:
    """One emulated child: its jobs' results; `boot_s` from launch to the child's first line (qemu and Python
    start-up); `wall_s` the whole run; the emulated CPU's features."""

    cpu: str
    jobs: list[JobResult]
    boot_s: float
    wall_s: float
    features: str
    report: dict[str, Any] = field(repr=False)


def _executorch_fields(job: Job) -> dict[str, Any]:
    """What the child needs besides the common fields to run an ExecuTorch program."""
    if job.names is None:
        raise ValueError("an ExecuTorch job needs its program's input and output names (Job.names)")
    problem = executorch_problem()
    if problem:
        raise ChildError(problem)
    inputs, outputs = job.names
    return {"library": str(executorch_library()), "version": executorch_version(), "input_names": inputs, "output_names": outputs}


def run_jobs(jobs: list[Job], cpu: str, timeout: float = 900.0) -> ChildRun:
    """Run `jobs` in one emulated child on CPU model `cpu`; ChildError naming the child's error when it fails."""
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="edgebert-arm64-") as tmp:
        directory = Path(tmp)
        request: dict[str, Any] = {"report": str(directory / "report.json"), "jobs": []}
        for i, job in enumerate(jobs):
            if job.runtime not in RUNTIMES:
                raise ValueError(f"runtime {job.runtime!r}: use one of {', '.join(RUNTIMES)}")
            feeds = {f"{r:06d}/{name}": np.asarray(v) for r, row in enumerate(job.rows) for name, v in row.items()}
            np.savez(directory / f"in{i}.npz", **feeds)
            request["jobs"].append(
                {
                    "model": str(Path(job.model).resolve()),
                    "runtime": job.runtime,
                    "threads": job.threads,
                    "kernels": job.kernels,
                    "signature": job.signature,
                    "repeat": job.repeat,
                    "inputs": str(directory / f"in{i}.npz"),
                    "rows": len(job.rows),
                    "outputs": str(directory / f"out{i}.npz"),
                    **(_executorch_fields(job) if job.runtime == "executorch" else {}),
                }
            )
        (directory / "request.json").write_text(json.dumps(request))
        launched = time.time()
        try:
            done = run_child(CHILD, [str(directory / "request.json")], cpu, timeout)
        except subprocess.TimeoutExpired:
            raise ChildError(f"the arm64 child on -cpu {cpu} timed out after {timeout:.0f} s") from None
        wall = time.time() - launched
        if done.returncode != 0:
            raise ChildError(f"the arm64 child on -cpu {cpu} failed: {last_error_line(done.stderr)}")
        report = json.loads((directory / "report.json").read_text())
        results = []
        for i, (job, done_job) in enumerate(zip(jobs, report["jobs"])):
            outputs: list[dict[str, np.ndarray]] = [{} for _ in job.rows]
            with np.load(directory / f"out{i}.npz", allow_pickle=False) as data:
                for key in data.files:
                    row, name = key.split("/", 1)
                    outputs[int(row)][name] = data[key]
            results.append(
                JobResult(outputs, done_job["import_s"], done_job["load_s"], done_job["row_s"], done_job["version"])
            )
    return ChildRun(cpu, results, report["started"] - launched, wall, report["features"], report)


# ----------------------------------------------------------------------------------------------------- self-test


def _case_dir() -> Path:
    return home() / "selftest" / f"case-v{SELFTEST_VERSION}"


def _onnx_case(directory: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Write the ONNX self-test model; (its feed, the exact expected outputs). u8 x s8 with a zero point and
    constant weights (prepacked), u8 x s8 with the weights as an input, s8 x s8, a ragged u8 x s8, and fp32.
    Activations take every 8-bit value, weights [-WEIGHT_MAX, WEIGHT_MAX] (see WEIGHT_MAX)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(SEED)
    a_u8 = rng.integers(0, 256, (M, K), dtype=np.uint8)
    a_s8 = rng.integers(-128, 128, (M, K), dtype=np.int8)
    w_s8 = rng.integers(-WEIGHT_MAX, WEIGHT_MAX + 1, (K, N), dtype=np.int8)
    b_s8 = rng.integers(-WEIGHT_MAX, WEIGHT_MAX + 1, (K, N), dtype=np.int8)
    a_zp = np.array(rng.integers(0, 256), dtype=np.uint8)
    t_u8 = rng.integers(0, 256, (TAIL_M, TAIL_K), dtype=np.uint8)
    t_w = rng.integers(-WEIGHT_MAX, WEIGHT_MAX + 1, (TAIL_K, TAIL_N), dtype=np.int8)
    t_zp = np.array(rng.integers(0, 256), dtype=np.uint8)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w_f32 = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    feed = {"a_u8": a_u8, "a_zp": a_zp, "b_s8": b_s8, "a_s8": a_s8, "t_u8": t_u8, "t_zp": t_zp, "x": x}

    def exact(a: np.ndarray, b: np.ndarray, zp: int = 0) -> np.ndarray:
        return ((a.astype(np.int64) - int(zp)) @ b.astype(np.int64)).astype(np.int32)

    expected = {
        "y_u8s8": exact(a_u8, w_s8, a_zp),
        "y_u8s8_dyn": exact(a_u8, b_s8),
        "y_s8s8": exact(a_s8, w_s8),
        "y_tail": exact(t_u8, t_w, t_zp),
        "y_f32": (x.astype(np.float64) @ w_f32.astype(np.float64)).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMulInteger", ["a_u8", "w_s8", "a_zp"], ["y_u8s8"]),
        helper.make_node("MatMulInteger", ["a_u8", "b_s8"], ["y_u8s8_dyn"]),
        helper.make_node("MatMulInteger", ["a_s8", "w_s8"], ["y_s8s8"]),
        helper.make_node("MatMulInteger", ["t_u8", "t_w", "t_zp"], ["y_tail"]),
        helper.make_node("MatMul", ["x", "w_f32"], ["y_f32"]),
    ]
    types = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
    types[np.dtype(np.float32)] = TensorProto.FLOAT
    types[np.dtype(np.int32)] = TensorProto.INT32
    inputs = [helper.make_tensor_value_info(n, types[v.dtype], list(v.shape)) for n, v in feed.items()]
    outputs = [helper.make_tensor_value_info(n, types[v.dtype], list(v.shape)) for n, v in expected.items()]
    weights = [numpy_helper.from_array(v, n) for n, v in (("w_s8", w_s8), ("t_w", t_w), ("w_f32", w_f32))]
    graph = helper.make_graph(nodes, "edgebert_arm64_selftest", inputs, outputs, weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="edgebert.arm64")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(directory / "selftest.onnx"))
    return feed, expected


def build_tflite(path: Path) -> None:
    """Write the LiteRT self-test model: a full-integer (int8) [M, K] -> [M, N] -> [M, TAIL_N] pair of fully
    connected layers, converted by TensorFlow (run in its own process: `python -m edgebert.arm64 _build-tflite`)."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(SEED + 1)
    w1 = tf.constant((rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32))
    b1 = tf.constant((rng.standard_normal(N) * 0.1).astype(np.float32))
    w2 = tf.constant((rng.standard_normal((N, TAIL_N)) / np.sqrt(N)).astype(np.float32))
    b2 = tf.constant((rng.standard_normal(TAIL_N) * 0.1).astype(np.float32))

    class Dense2(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([M, K], tf.float32, name="x")])
        def __call__(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            h = tf.matmul(x, w1) + b1
            return {"y": tf.matmul(h, w2) + b2}

    module = Dense2()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    calibration = rng.standard_normal((8, M, K)).astype(np.float32)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([c] for c in calibration)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    path.write_bytes(converter.convert())


def litert_reference(model: Path, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs of an int8 LiteRT model made only of FULLY_CONNECTED ops (the self-test's), computed in numpy
    with TFLite's integer semantics: exact int32 accumulation of (x - x_zero_point) * w + bias, then per-channel
    requantization by TFLite's quantized multiplier with one rounding (TFLITE_SINGLE_ROUNDING, as its ARM builds
    and XNNPACK compute), plus the output zero point, clamped to int8."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(
        model_path=str(model), experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    interpreter.allocate_tensors()
    tensors = {d["index"]: d for d in interpreter.get_tensor_details()}
    runner = interpreter.get_signature_runner()
    values: dict[int, np.ndarray] = {}
    for name, detail in runner.get_input_details().items():
        values[detail["index"]] = np.asarray(feed[name])

    def quantization(index: int) -> tuple[np.ndarray, np.ndarray]:
        q = tensors[index]["quantization_parameters"]
        return q["scales"].astype(np.float32), q["zero_points"].astype(np.int64)

    for op in interpreter._get_ops_details():  # the graph's ops in execution order
        if op["op_name"] != "FULLY_CONNECTED":
            raise ValueError(f"litert_reference models FULLY_CONNECTED only, not {op['op_name']}")
        x_index, w_index, b_index = (list(op["inputs"]) + [-1])[:3]
        (out_index,) = op["outputs"]
        x_scale, x_zero = quantization(x_index)
        w_scale, _ = quantization(w_index)
        out_scale, out_zero = quantization(out_index)
        w = interpreter.get_tensor(w_index).astype(np.int64)  # [out, in]
        acc = (values[x_index].astype(np.int64) - x_zero[0]) @ w.T
        if b_index >= 0:
            acc += interpreter.get_tensor(b_index).astype(np.int64)
        w_scale = np.broadcast_to(w_scale, (w.shape[0],))
        out = np.empty_like(acc)
        for c in range(w.shape[0]):
            # TFLite: the input x filter scale product in float, the division in double, then frexp.
            real = float(np.float32(x_scale[0] * w_scale[c])) / float(out_scale[0])
            fraction, shift = np.frexp(real)
            multiplier = int(round(fraction * (1 << 31)))
            if multiplier == 1 << 31:
                multiplier, shift = multiplier // 2, shift + 1
            total_shift = 31 - int(shift)
            out[:, c] = (acc[:, c] * multiplier + (1 << (total_shift - 1))) >> total_shift
        values[out_index] = np.clip(out + out_zero[0], -128, 127).astype(np.int8)
    return {name: values[detail["index"]] for name, detail in runner.get_output_details().items()}


def _host_litert(model: Path, feed: dict[str, np.ndarray], kernels: str) -> dict[str, np.ndarray]:
    """The host's LiteRT outputs of `model` on `feed` (recorded beside the known answers)."""
    from edgebert.targets.tf_subprocess import apply_env

    apply_env(os.environ, tensorflow=False)  # LiteRT's C++ logging quiet, as edgebert's TFLite runner has it
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.AUTO if kernels == "xnnpack" else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    interpreter = Interpreter(model_path=str(model), num_threads=1, experimental_op_resolver_type=resolver)
    runner = interpreter.get_signature_runner()
    return {name: value.copy() for name, value in runner(**feed).items()}


def _build_case(directory: Path) -> None:
    """The self-test's models, feeds and known answers, into `directory` (built once, then reused)."""
    import numpy as np

    from edgebert.targets.tf_subprocess import child_env

    directory.mkdir(parents=True, exist_ok=True)
    onnx_feed, onnx_expected = _onnx_case(directory)
    tflite = directory / "selftest.tflite"
    done = subprocess.run(
        [sys.executable, "-m", "edgebert.arm64", "_build-tflite", str(tflite)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        env=child_env(tensorflow=True),
    )
    if done.returncode != 0 or not tflite.is_file():
        raise ChildError(f"building the LiteRT self-test model failed: {last_error_line(done.stderr)}")
    from ai_edge_litert.interpreter import Interpreter

    details = Interpreter(model_path=str(tflite)).get_signature_runner().get_input_details()
    rng = np.random.default_rng(SEED + 2)
    litert_feed = {n: rng.integers(-128, 128, tuple(d["shape"]), dtype=np.int8) for n, d in details.items()}
    arrays = {f"onnxruntime/{n}": v for n, v in onnx_expected.items()}
    litert_expected = litert_reference(tflite, litert_feed)
    host_differs = {}  # how many of the known answers the host's own LiteRT misses (x86's built-in kernels do)
    for kernels in LITERT_KERNELS:
        arrays.update({f"litert-{kernels}/{n}": v for n, v in litert_expected.items()})
        host = _host_litert(tflite, litert_feed, kernels)
        host_differs[kernels] = int(sum((host[n] != v).sum() for n, v in litert_expected.items()))
    np.savez(directory / "expected.npz", **arrays)
    np.savez(directory / "onnx_feed.npz", **onnx_feed)
    np.savez(directory / "litert_feed.npz", **litert_feed)
    files = ("selftest.onnx", "selftest.tflite", "expected.npz", "onnx_feed.npz", "litert_feed.npz")
    digests = {name: _file_sha256(directory / name) for name in files}
    record = {"version": SELFTEST_VERSION, "files": digests, "host_litert_values_differing": host_differs}
    (directory / "case.json").write_text(json.dumps(record, indent=1))


@functools.lru_cache(maxsize=4)
def _load_case(directory: str, stamp: float) -> dict[str, Any]:
    import numpy as np

    del stamp
    path = Path(directory)
    case: dict[str, Any] = json.loads((path / "case.json").read_text())

    def load(name: str) -> dict[str, np.ndarray]:
        with np.load(path / name, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}

    case["expected"] = load("expected.npz")
    case["onnx_feed"] = load("onnx_feed.npz")
    case["litert_feed"] = load("litert_feed.npz")
    case["digest"] = hashlib.sha256((path / "case.json").read_bytes()).hexdigest()
    case["dir"] = path
    return case


def selftest_case() -> dict[str, Any]:
    """The self-test's models, feeds (`onnx_feed`, `litert_feed`) and known answers (`expected`: "job/output" ->
    array, job onnxruntime / litert-xnnpack / litert-builtin); built on first use (TensorFlow converts the LiteRT
    model in its own process), then read from home()/selftest."""
    directory = _case_dir()
    if not (directory / "case.json").is_file():
        import shutil

        staging = directory.with_name(f"{directory.name}.tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        _build_case(staging)
        shutil.rmtree(directory, ignore_errors=True)
        staging.rename(directory)
    return _load_case(str(directory), (directory / "case.json").stat().st_mtime)


def compare(expected: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> list[str]:
    """What differs between the known answers and the emulated outputs (empty: all match): integers must be
    equal, floats within FP32_RTOL of the reference's largest magnitude."""
    import numpy as np

    problems = []
    for key, want in expected.items():
        have = got.get(key)
        if have is None:
            problems.append(f"{key}: no output")
            continue
        if have.shape != want.shape or have.dtype != want.dtype:
            problems.append(f"{key}: {have.dtype}{list(have.shape)}, expected {want.dtype}{list(want.shape)}")
            continue
        if want.dtype.kind in "iub":
            wrong = have != want
            if wrong.any():
                diff = np.abs(have.astype(np.int64) - want.astype(np.int64)).max()
                problems.append(f"{key}: {int(wrong.sum())} of {want.size} integers differ (max |diff| {diff})")
        else:
            scale = max(float(np.abs(want).max()), np.finfo(np.float32).tiny)
            error = float(np.abs(have.astype(np.float64) - want.astype(np.float64)).max()) / scale
            if not np.isfinite(error) or error > FP32_RTOL:
                problems.append(f"{key}: relative error {error:.3g} > {FP32_RTOL:g}")
    return problems


def _selftest_jobs(case: dict[str, Any]) -> list[Job]:
    directory = case["dir"]
    jobs = [Job(directory / "selftest.onnx", "onnxruntime", [case["onnx_feed"]])]
    jobs += [Job(directory / "selftest.tflite", "litert", [case["litert_feed"]], kernels=k) for k in LITERT_KERNELS]
    return jobs


def _wheels() -> list[str]:
    return sorted(p.name for p in site_dir().glob("*.dist-info"))


def selftest_key() -> dict[str, Any]:
    """What a cached verdict holds for: the self-test's version and case, the emulator and the root's Python
    (their sha256), the wheels."""
    return {
        "selftest": SELFTEST_VERSION,
        "emulator": emulator_version(),
        "emulator_sha256": _file_sha256(emulator()),
        "python_sha256": _file_sha256(rootfs() / PYTHON),
        "wheels": _wheels(),
    }


def _verdict_file(key: dict[str, Any]) -> Path:
    """One file per key: trying another emulator ($EDGEBERT_ARM64_QEMU) keeps the installed one's verdict."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return home() / "selftest" / f"verdict-{digest}.json"


def self_test(
    cpus: list[str] | None = None,
    *,
    force: bool = False,
    expected: dict[str, np.ndarray] | None = None,
    timeout: float = 600.0,
) -> dict[str, Any]:
    """Prove on each CPU model (default: all of CPU_MODELS) that the emulator computes right: the ONNX case's int8
    products (u8 x s8 with and without prepacked weights and a zero point, s8 x s8, a ragged shape; activations of
    every 8-bit value, weights in [-WEIGHT_MAX, WEIGHT_MAX]) must equal numpy's exact int32 products, its fp32
    product the float64 one within FP32_RTOL, and the int8 LiteRT model's outputs (XNNPACK and built-in kernels)
    `litert_reference`'s exactly (TFLite's integer semantics in numpy; the host's XNNPACK gives them too, while
    x86's built-in kernels round about 2% of them one step off).

    Returns {"ok", "emulator", "cached", "cpus": {cpu: {"ok", "problems", "features", "seconds", "boot_s"}}}.
    A verdict is cached in home()/selftest for this emulator, root and wheels (`force` runs again); `expected`
    replaces the known answers (keys "job/output"; to show that a wrong one fails) and is never cached."""
    cpus = list(cpus or CPU_MODELS)
    missing = _missing_files()
    if missing:
        raise ChildError(missing)
    case = selftest_case()
    key = {**selftest_key(), "case": case["digest"]}
    cache = _verdict_file(key)
    verdicts: dict[str, Any] = {}
    if expected is None and cache.is_file():
        stored = json.loads(cache.read_text())
        if stored.get("key") == key:
            verdicts = stored["cpus"]
    results: dict[str, Any] = {}
    ran = False
    for cpu in cpus:
        if cpu in verdicts and not force:
            results[cpu] = verdicts[cpu]
            continue
        ran = True
        started = time.time()
        try:
            child = run_jobs(_selftest_jobs(case), cpu, timeout)
        except ChildError as error:
            seconds = round(time.time() - started, 2)
            results[cpu] = {"ok": False, "problems": [str(error)], "features": "", "seconds": seconds}
            continue
        got = {}
        for job, result in zip(_selftest_jobs(case), child.jobs):
            name = job.runtime if job.runtime == "onnxruntime" else f"litert-{job.kernels}"
            got.update({f"{name}/{n}": v for n, v in result.outputs[0].items()})
        problems = compare(case["expected"] if expected is None else expected, got)
        results[cpu] = {
            "ok": not problems,
            "problems": problems,
            "features": child.features,
            "seconds": round(child.wall_s, 2),
            "boot_s": round(child.boot_s, 2),
        }
    if expected is None and ran:
        verdicts.update(results)
        cache.parent.mkdir(parents=True, exist_ok=True)
        staging = cache.with_name(f"{cache.name}.tmp{os.getpid()}")
        staging.write_text(json.dumps({"key": key, "cpus": verdicts}, indent=1))
        staging.replace(cache)
    return {
        "ok": all(r["ok"] for r in results.values()),
        "emulator": key["emulator"],
        "cached": not ran,
        "cpus": results,
    }


# ------------------------------------------------------------------------------------------------------------ CLI


def _main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m edgebert.arm64", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("info", help="where the ARM64 path is and whether it is usable (no self-test run)")
    test = sub.add_parser("selftest", help="prove the emulator right on each CPU model (cached)")
    test.add_argument("--force", action="store_true", help="run again even when a verdict is cached")
    test.add_argument("--cpu", action="append", help="a qemu -cpu model (repeatable; default: every CPU_MODELS)")
    build = sub.add_parser("_build-tflite")  # internal: the TensorFlow process of selftest_case()
    build.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    if args.command == "_build-tflite":
        build_tflite(args.path)
        return 0
    if args.command == "selftest":
        missing = _missing_files()
        if missing:
            print(f"arm64 self-test: {missing}", file=sys.stderr)
            return 1
        problem = install_problem()
        if problem:  # e.g. an old qemu given by $EDGEBERT_ARM64_QEMU: the self-test still shows what it computes
            print(f"arm64 self-test: note: {problem}", file=sys.stderr)
        try:
            verdict = self_test(args.cpu, force=args.force)
        except (ChildError, ImportError, OSError) as error:
            print(f"arm64 self-test: could not run: {error}", file=sys.stderr)
            return 1
        for cpu, result in verdict["cpus"].items():
            state = "ok" if result["ok"] else "FAILED: " + "; ".join(result["problems"][:3])
            cached = ", cached" if verdict["cached"] else ""
            print(f"arm64 self-test -cpu {cpu}: {state} ({result['seconds']:.1f} s{cached})")
        return 0 if verdict["ok"] else 1
    print(f"home: {home()}")
    print(f"emulator: {emulator()}")
    problem = install_problem()
    if problem is None:
        print(f"qemu: {emulator_version()}")
        print(f"wheels: {' '.join(w.removesuffix('.dist-info') for w in _wheels())}")
    print(f"state: {problem or 'installed'}")
    return 0 if problem is None else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
