"""The child that `edgebert.arm64` runs under the emulated aarch64 Python: `python3.11 arm64_child.py REQUEST.json`.

It imports nothing of edgebert (only the standard library, numpy and the runtime a job names: onnxruntime,
ai_edge_litert, or ExecuTorch's runtime through edgebert's C interface loaded by ctypes), so it runs from this file's
path with only the arm64 site directory on PYTHONPATH.

The request (JSON) lists jobs, run in order in this one process (the emulated start-up and imports cost seconds):

    {"report": "/path/report.json",
     "jobs": [{"model": "/path/model.onnx", "runtime": "onnxruntime" | "litert" | "executorch", "threads": 1,
               "inputs": "/path/in.npz", "rows": 3, "outputs": "/path/out.npz",
               "kernels": "xnnpack" | "builtin",          # litert: default XNNPACK delegate, or none
               "signature": null | "name" | ["name", ...], # litert: one for all rows, or one per row
               "library": "/path/libedgebert_et.so",       # executorch: the C interface, its runtime's "version",
               "input_names": [...], "output_names": [...], # and the program's inputs and outputs in order
               "repeat": 1}]}                              # runs of each row (timing); outputs of the last

A job's input npz holds `"{row:06d}/{input name}"` arrays (rows may differ in shape); its output npz gets
`"{row:06d}/{output name}"`. Integer inputs are cast to the model's integer input type (refused if a value does not
fit), float inputs to its float type. The report (JSON) has the start time, import and load times, each row's
seconds, the output names, the versions and the emulated CPU's features. A failure exits 1 with one last line
`arm64_child: error: ...` on stderr.
"""

from __future__ import annotations

import json
import sys
import time

STARTED = time.time()  # the host compares it with its launch time: the emulator's and Python's start-up

import numpy as np  # noqa: E402

ROW_KEY = "{row:06d}/{name}"
ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def cpu_features() -> str:
    """The `Features` line of /proc/cpuinfo (qemu shows the emulated CPU's)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("Features"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cast(name: str, value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`value` as `dtype`: integers to integers (refused when a value does not fit), floats to floats."""
    value = np.asarray(value)
    dtype = np.dtype(dtype)
    if value.dtype == dtype:
        return value
    kinds = {value.dtype.kind, dtype.kind}
    if kinds <= {"i", "u", "b"}:
        if value.size and dtype.kind != "b":
            info = np.iinfo(dtype)
            if value.min() < info.min or value.max() > info.max:
                raise ValueError(f"input {name!r}: values [{value.min()}, {value.max()}] do not fit {dtype}")
        return value.astype(dtype)
    if kinds <= {"f"}:
        return value.astype(dtype)
    raise ValueError(f"input {name!r} is {value.dtype}, the model takes {dtype}")


def read_rows(path: str, count: int) -> list[dict[str, np.ndarray]]:
    rows: list[dict[str, np.ndarray]] = [{} for _ in range(count)]
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            row, name = key.split("/", 1)
            rows[int(row)][name] = data[key]
    return rows


class OnnxJob:
    def __init__(self, job: dict) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = int(job.get("threads", 1))
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(job["model"], options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name: ORT_TYPES.get(i.type) for i in self.session.get_inputs()}
        self.output_names = [o.name for o in self.session.get_outputs()]

    def run(self, row: int, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [n for n in self.inputs if n not in feed]
        if missing:
            raise ValueError(f"row {row}: no value for the model's inputs {missing}")
        cast_feed = {n: cast(n, feed[n], t) if t is not None else feed[n] for n, t in self.inputs.items()}
        return dict(zip(self.output_names, self.session.run(self.output_names, cast_feed)))


class LiteRTJob:
    def __init__(self, job: dict) -> None:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        kernels = job.get("kernels", "xnnpack")
        if kernels not in ("xnnpack", "builtin"):
            raise ValueError(f"litert kernels {kernels!r}: use 'xnnpack' or 'builtin'")
        resolver = OpResolverType.AUTO if kernels == "xnnpack" else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        self.interpreter = Interpreter(
            model_path=job["model"], num_threads=int(job.get("threads", 1)), experimental_op_resolver_type=resolver
        )
        self.signatures = self.interpreter.get_signature_list()
        self.signature = job.get("signature")
        self.runners: dict[str, object] = {}
        self.allocated_shapes: dict[int, tuple[int, ...]] | None = None

    def signature_of(self, row: int) -> str | None:
        chosen = self.signature[row] if isinstance(self.signature, list) else self.signature
        if chosen is None and "serving_default" in self.signatures:
            chosen = "serving_default"
        if chosen is not None and chosen not in self.signatures:
            raise ValueError(f"row {row}: no signature {chosen!r} (the model has {sorted(self.signatures)})")
        return chosen

    def run(self, row: int, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        signature = self.signature_of(row)
        if signature is not None:
            runner = self.runners.get(signature)
            if runner is None:
                runner = self.runners[signature] = self.interpreter.get_signature_runner(signature)
            details = runner.get_input_details()
            missing = [n for n in details if n not in feed]
            if missing:
                raise ValueError(f"row {row}: no value for signature {signature!r}'s inputs {missing}")
            outputs = runner(**{n: cast(n, feed[n], d["dtype"]) for n, d in details.items()})
            return {name: np.array(value) for name, value in outputs.items()}
        return self.run_tensors(row, feed)

    def run_tensors(self, row: int, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A model without signatures: its input tensors by name, resized to the row's shapes when they differ."""
        interpreter = self.interpreter
        details = {d["name"]: d for d in interpreter.get_input_details()}
        missing = [n for n in details if n not in feed]
        if missing:
            raise ValueError(f"row {row}: no value for the model's inputs {missing}")
        values = {n: cast(n, feed[n], d["dtype"]) for n, d in details.items()}
        shapes = {d["index"]: tuple(values[n].shape) for n, d in details.items()}
        if shapes != self.allocated_shapes:
            for n, d in details.items():
                if tuple(d["shape"]) != shapes[d["index"]]:
                    interpreter.resize_tensor_input(d["index"], list(shapes[d["index"]]))
            interpreter.allocate_tensors()
            self.allocated_shapes = shapes
        for n, d in details.items():
            interpreter.set_tensor(d["index"], values[n])
        interpreter.invoke()
        return {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}


class ExecuTorchJob:
    """A program's `forward` through edgebert's C interface to ExecuTorch's aarch64 runtime (`job["library"]`, built
    by install_arm64.sh from edgebert/targets/executorch/arm64_runtime.cpp), inputs as int64 in the order given."""

    DTYPES = {0: np.uint8, 1: np.int8, 3: np.int32, 4: np.int64, 5: np.float16, 6: np.float32, 11: np.bool_}

    def __init__(self, job: dict) -> None:
        import ctypes as c

        self.c = c
        lib = self.lib = c.CDLL(job["library"])
        lib.ebet_load.restype = c.c_void_p
        lib.ebet_load.argtypes = [c.c_char_p, c.c_char_p, c.c_int]
        lib.ebet_run.argtypes = [c.c_void_p, c.c_int, c.POINTER(c.c_void_p), c.POINTER(c.c_int), c.POINTER(c.c_int), c.POINTER(c.c_int64), c.c_char_p, c.c_int]
        lib.ebet_outputs.argtypes = [c.c_void_p]
        lib.ebet_output_info.argtypes = [c.c_void_p, c.c_int, c.POINTER(c.c_int), c.POINTER(c.c_int), c.POINTER(c.c_int64)]
        lib.ebet_output_copy.argtypes = [c.c_void_p, c.c_int, c.c_void_p, c.c_size_t]
        self.error = c.create_string_buffer(512)
        self.handle = lib.ebet_load(job["model"].encode(), self.error, 512)
        if not self.handle:
            raise RuntimeError(f"{job['model']}: {self.error.value.decode(errors='replace')}")
        self.input_names = list(job["input_names"])
        self.output_names = list(job["output_names"])

    def run(self, row: int, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        c = self.c
        missing = [n for n in self.input_names if n not in feed]
        if missing:
            raise ValueError(f"row {row}: no value for the program's inputs {missing}")
        arrays = [np.ascontiguousarray(cast(n, feed[n], np.int64)) for n in self.input_names]
        count = len(arrays)
        datas = (c.c_void_p * count)(*[a.ctypes.data for a in arrays])
        dtypes = (c.c_int * count)(*[4] * count)
        ranks = (c.c_int * count)(*[a.ndim for a in arrays])
        shapes = (c.c_int64 * sum(a.ndim for a in arrays))(*[d for a in arrays for d in a.shape])
        if self.lib.ebet_run(self.handle, count, datas, dtypes, ranks, shapes, self.error, 512) != 0:
            raise RuntimeError(f"row {row}: {self.error.value.decode(errors='replace')}")
        return {name: self.output(i) for i, name in enumerate(self.output_names[: self.lib.ebet_outputs(self.handle)])}

    def output(self, index: int) -> np.ndarray:
        c = self.c
        dtype, rank, shape = c.c_int(), c.c_int(), (c.c_int64 * 8)()
        if self.lib.ebet_output_info(self.handle, index, c.byref(dtype), c.byref(rank), shape) != 0:
            raise RuntimeError(f"output {index} has more than 8 dimensions")
        if dtype.value not in self.DTYPES:
            raise RuntimeError(f"output {index} has ExecuTorch scalar type {dtype.value}, which this child does not read")
        value = np.empty(tuple(shape[: rank.value]), dtype=self.DTYPES[dtype.value])
        if self.lib.ebet_output_copy(self.handle, index, value.ctypes.data, value.nbytes) != 0:
            raise RuntimeError(f"output {index}: its size changed while it was copied")
        return value


def run_job(job: dict) -> dict:
    runtime = job["runtime"]
    started = time.perf_counter()
    if runtime == "onnxruntime":
        import onnxruntime as module

        version = module.__version__
    elif runtime == "litert":
        import ai_edge_litert as module

        version = getattr(module, "__version__", "?")
    elif runtime == "executorch":
        version = job.get("version", "?")
    else:
        raise ValueError(f"runtime {runtime!r}: use 'onnxruntime', 'litert' or 'executorch'")
    imported = time.perf_counter()
    runner = {"onnxruntime": OnnxJob, "litert": LiteRTJob, "executorch": ExecuTorchJob}[runtime](job)
    loaded = time.perf_counter()
    rows = read_rows(job["inputs"], int(job["rows"]))
    repeat = max(1, int(job.get("repeat", 1)))
    outputs: dict[str, np.ndarray] = {}
    row_s: list[list[float]] = []
    names: list[str] = []
    for row, feed in enumerate(rows):
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            result = runner.run(row, feed)
            times.append(time.perf_counter() - t)
        row_s.append(times)
        names = list(result)
        for name, value in result.items():
            outputs[ROW_KEY.format(row=row, name=name)] = np.asarray(value)
    np.savez(job["outputs"], **outputs)
    return {
        "runtime": runtime,
        "version": version,
        "import_s": imported - started,
        "load_s": loaded - imported,
        "row_s": row_s,
        "output_names": names,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: arm64_child.py REQUEST.json", file=sys.stderr)
        return 2
    imported_numpy = time.time()
    with open(argv[1]) as f:
        request = json.load(f)
    import platform

    report = {
        "started": STARTED,
        "numpy_import_s": imported_numpy - STARTED,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "features": cpu_features(),
        "jobs": [],
    }
    try:
        for job in request["jobs"]:
            report["jobs"].append(run_job(job))
    except Exception as error:  # noqa: BLE001 - the host gets one line naming the failure
        import traceback

        traceback.print_exc()
        print(f"arm64_child: error: {type(error).__name__}: {error}".replace("\n", " "), file=sys.stderr)
        return 1
    report["finished"] = time.time()
    with open(request["report"], "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
