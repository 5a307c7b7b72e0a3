"""The child that `edgebert.arm64` runs under the emulated aarch64 Python: `python3.11 arm64_child.py REQUEST.json`.

It imports nothing of edgebert (only the standard library, numpy and the runtime a job names: onnxruntime or
ai_edge_litert), so it runs from this file's path with only the arm64 site directory on PYTHONPATH.

The request (JSON) lists jobs, run in order in this one process (the emulated start-up and imports cost seconds):

    {"report": "/path/report.json",
     "jobs": [{"model": "/path/model.onnx", "runtime": "onnxruntime" | "litert", "threads": 1,
               "inputs": "/path/in.npz", "rows": 3, "outputs": "/path/out.npz",
               "kernels": "xnnpack" | "builtin",          # litert: default XNNPACK delegate, or none
               "signature": null | "name" | ["name", ...], # litert: one for all rows, or one per row
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


def run_job(job: dict) -> dict:
    runtime = job["runtime"]
    started = time.perf_counter()
    if runtime == "onnxruntime":
        import onnxruntime as module
    elif runtime == "litert":
        import ai_edge_litert as module
    else:
        raise ValueError(f"runtime {runtime!r}: use 'onnxruntime' or 'litert'")
    imported = time.perf_counter()
    runner = OnnxJob(job) if runtime == "onnxruntime" else LiteRTJob(job)
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
        "version": getattr(module, "__version__", "?"),
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
