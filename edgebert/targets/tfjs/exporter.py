"""TF.js target: a tfjs graph model (`model.json` + one weight shard) with int32 [1, seq_len] inputs, run in Node.

The exported module's own graph is captured here (`edgebert.targets.torch_graph`: torch.export at each bucket length)
and written in TensorFlow ops in a separate Python process (`edgebert.targets.tfjs.convert`, started by
`edgebert.targets.tf_subprocess.run_tf`), which runs tensorflowjs_converter on it; TensorFlow never loads in the
torch process.
Verification runs the artifact in Node with @tensorflow/tfjs 4.22.0 on the wasm backend (`js/run_tfjs.mjs`).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from edgebert import buckets, cost, cpu
from edgebert.errors import TargetUnavailable
from edgebert.families import Family
from edgebert.modelio import LoadedModel
from edgebert.targets.base import (
    INT8_FLOAT_ISLANDS, OUTPUT_NAMES, RECIPE_MIN_COSINE, ConvertResult, Exporter, ExportOptions, KernelPath, Runner, guard_min_cosine,
    guard_record,
)
from edgebert.targets.tf_graph import WEIGHT_SCOPE
from edgebert.targets.torch_graph import capture_model
from edgebert.targets.tf_subprocess import run_tf, tail, warm
from edgebert.targets.tfjs.shared_weights import model_file

MODEL_FILE = "model.json"
JS_DIR = Path(__file__).resolve().parent / "js"
JS_RUNNER = JS_DIR / "run_tfjs.mjs"
JS_PACKAGES = ("@tensorflow/tfjs", "@tensorflow/tfjs-backend-wasm", "@huggingface/tokenizers")
JS_TOKENIZER = "@huggingface/tokenizers (JS, in Node), as the demo app"
# edgebert-runtime, the JS package apps use (js/edgebert-runtime), as the runner imports it: linked in a checkout
# (built by ./install.sh), a built copy in the wheel.
RUNTIME_ENTRY = "edgebert-runtime/dist/index.js"
NPM_HINT = f"npm ci --prefix {JS_DIR}"
TFJS_VERSION = "4.22.0"
CONVERT_TIMEOUT_S = 3600
CONVERT_MODULE = "edgebert.targets.tfjs.convert"  # the TensorFlow process's module (edgebert.targets.tf_subprocess)
QUANTIZATION_RECIPES = {
    "none": "float32 weights",
    "uint8": "tfjs per-tensor affine uint8 weights, except float16 islands (quantization.float_islands: the FFN "
    "down-projection kernels, whose outliers per-tensor uint8 cannot hold, then more layer roles while the guard texts "
    "need them); the 1-D weights (biases, norm scales and shifts) float16 too",
    "float16": "float16 weights (--quantize_float16 '*')",
}


def find_node() -> str:
    """The `node` executable (EDGEBERT_NODE overrides PATH), or TargetUnavailable."""
    node = os.environ.get("EDGEBERT_NODE") or shutil.which("node")
    if not node:
        raise TargetUnavailable(
            "the tfjs target runs its exports in Node.js, but `node` is not on PATH; install Node 18+"
        )
    return node


def check_js_packages() -> None:
    """TargetUnavailable unless edgebert/targets/tfjs/js/node_modules holds tfjs, its wasm backend and the JS tokenizer,
    and edgebert-runtime is built."""
    missing = [p for p in JS_PACKAGES if not (JS_DIR / "node_modules" / p / "package.json").exists()]
    hint = NPM_HINT
    if not (JS_DIR / RUNTIME_ENTRY).exists():
        missing.append(f"edgebert-runtime's build ({RUNTIME_ENTRY})")
        package = (JS_DIR / RUNTIME_ENTRY).parents[1].resolve()
        hint = f"npm ci --prefix {package} && npm run build --prefix {package} && {NPM_HINT} (./install.sh does all three)"
    if missing:
        raise TargetUnavailable(f"the tfjs target's Node packages are not installed ({', '.join(missing)} missing); run: {hint}")


def _bundle_resource_line(shards: list[str]) -> str:
    """The tfjs-react-native call an app needs to load this export from its bundle."""
    weights = ", ".join(f"require('./{s}')" for s in shards)
    return f"bundleResourceIO(require('./model.json'), {weights if len(shards) == 1 else '[' + weights + ']'})"


def attention_per_bucket(lengths: tuple[int, ...], batched_max_len: int) -> dict[str, str]:
    """{length: "batched" | "per-head"}: batched attention (fewer ops) up to `batched_max_len` tokens, one 2-D product
    per head above (the wasm backend's fast kernel); see config.TFJS_BATCHED_ATTENTION_MAX_LEN."""
    return {str(n): "batched" if n <= batched_max_len else "per-head" for n in lengths}


class TFJSRunner(Runner):
    """Runs a tfjs graph model in Node (`js/run_tfjs.mjs --serve`, wasm backend, cpu fallback). The wasm backend runs
    single-threaded in Node: `processes` Node processes (the verification's: one per core) share the rows of a
    call; timing always runs in the first alone."""

    def __init__(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None, processes: int = 1) -> None:
        self.node = find_node()
        check_js_packages()
        self.export_dir = Path(export_dir).resolve()
        self.input_names = [i["name"] for i in manifest["inputs"]]
        self.model_files = {n: e.get("model_file", MODEL_FILE) for n, e in buckets.from_manifest(manifest).items()}
        declared = manifest.get("outputs") or [{"name": n, "dtype": "float32"} for n in OUTPUT_NAMES]
        self.output_names = [o["name"] for o in declared]
        self.output_dtypes = {o["name"]: o.get("dtype", "float32") for o in declared}
        self.padding_side = buckets.padding_side(manifest)  # the tokenizer's: shorter inputs are padded on it
        self.threads = threads  # the wasm backend in Node runs single-threaded; kept for the interface
        self.processes = max(1, int(processes))
        self.backend = os.environ.get("EDGEBERT_TFJS_BACKEND", "wasm")
        self.last_backend: str | None = None
        self._workers: dict[int, tuple[subprocess.Popen, Any]] = {}  # index -> (node process, its stderr file)

    def _request(self, inputs: dict[str, np.ndarray], **fields: Any) -> dict[str, Any]:
        """One request to Node with `inputs` [B, T] padded to the smallest bucket >= T, run on that bucket's graph."""
        bucket = buckets.pick(np.asarray(inputs["input_ids"]).shape[1], tuple(self.model_files))
        return self._exchange(self._bucket_request(buckets.fit(inputs, bucket, self.input_names, side=self.padding_side), bucket, **fields))

    def _bucket_request(self, feeds: dict[str, np.ndarray], bucket: int, **fields: Any) -> dict[str, Any]:
        """The request running `feeds` (already [B, bucket]) on `bucket`'s graph."""
        rows = {name: feeds[name].tolist() for name in self.input_names}
        return {"model_dir": str(self.export_dir), "model_file": self.model_files[bucket], "inputs": rows, "backend": self.backend, **fields}

    def _exchange(self, request: dict[str, Any], worker: int = 0) -> dict[str, Any]:
        """One JSON request to a Node process, one JSON answer back (TargetUnavailable when Node fails)."""
        self._send(worker, request)
        return self._receive(worker)

    def _send(self, worker: int, request: dict[str, Any]) -> None:
        process = self._server(worker)
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the answer's read reports it

    def _receive(self, worker: int) -> dict[str, Any]:
        process, stderr = self._workers[worker]
        try:
            line = process.stdout.readline()
        except OSError:
            line = ""
        if not line:
            detail = self._stderr_tail(stderr)
            self.close()
            raise TargetUnavailable(f"the TF.js runner in Node stopped (exit {process.poll()}):\n{detail}")
        answer = json.loads(line)
        if "error" in answer:
            raise TargetUnavailable(f"the TF.js runner failed in Node: {answer['error']}\n{self._stderr_tail(stderr)}")
        self.last_backend = answer.get("backend")
        return answer

    def _server(self, worker: int = 0) -> subprocess.Popen:
        """The long-lived `node run_tfjs.mjs --serve` process `worker` (models loaded once, reused by every call)."""
        process = self._workers.get(worker, (None, None))[0]
        if process is None or process.poll() is not None:
            stderr = tempfile.TemporaryFile(mode="w+")
            process = subprocess.Popen(
                [self.node, str(JS_RUNNER), "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                cwd=str(JS_DIR),
            )
            self._workers[worker] = (process, stderr)
        return process

    @staticmethod
    def _stderr_tail(stderr: Any) -> str:
        if stderr is None or stderr.closed:
            return ""
        stderr.seek(0)
        return tail(stderr.read())

    def close(self) -> None:
        """Stop the Node processes (closing its stdin ends each)."""
        workers, self._workers = self._workers, {}
        for process, stderr in workers.values():
            try:
                process.stdin.close()
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
            stderr.close()

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.run_many([inputs])[0]

    def run_many(self, feeds: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
        """Each feed's outputs: every row padded to its feed's bucket, the rows of one bucket split over the Node
        processes (one request each, answered in parallel), cut back to each feed's width."""
        rows: dict[int, list[tuple[int, dict[str, np.ndarray]]]] = {}  # bucket -> (feed index, its fitted rows)
        for index, feed in enumerate(feeds):
            bucket = buckets.pick(np.asarray(feed["input_ids"]).shape[1], tuple(self.model_files))
            rows.setdefault(bucket, []).append((index, buckets.fit(feed, bucket, self.input_names, side=self.padding_side)))
        results: list[dict[str, np.ndarray] | None] = [None] * len(feeds)
        for bucket, fitted in rows.items():
            stacked = {n: np.concatenate([f[n] for _, f in fitted]) for n in self.input_names}
            outputs = self._run_split(stacked, bucket)
            start = 0
            for index, f in fitted:
                count, width = len(f["input_ids"]), np.asarray(feeds[index]["input_ids"]).shape[1]
                results[index] = {n: buckets.cut(v[start : start + count], width, self.padding_side).astype(self.output_dtypes[n]) for n, v in outputs.items()}
                start += count
        return results  # type: ignore[return-value]

    def _run_split(self, feeds: dict[str, np.ndarray], bucket: int) -> dict[str, np.ndarray]:
        """`feeds` [B, bucket] on `bucket`'s graph, its rows shared out over the Node processes: float32 outputs."""
        total = len(feeds["input_ids"])
        bounds = np.linspace(0, total, min(self.processes, total) + 1).astype(int)
        parts = [{n: v[lo:hi] for n, v in feeds.items()} for lo, hi in zip(bounds[:-1], bounds[1:])]
        for worker, part in enumerate(parts):  # one request in flight per process: no pipe can fill both ways
            self._send(worker, self._bucket_request(part, bucket, mode="run", encoding="base64", outputs=self.output_names))
        answers = [self._receive(worker)["outputs"] for worker in range(len(parts))]
        return {
            name: np.concatenate([np.frombuffer(base64.b64decode(a[name]["f32"]), dtype="<f4").reshape(a[name]["shape"]) for a in answers])
            for name in self.output_names
        }  # integer ids travel as float32 (exact below 2^24)

    def time_calls(self, inputs: dict[str, np.ndarray], warmup: int, repeats: int) -> list[float]:
        """Seconds per call, measured inside Node (model load and process start-up excluded)."""
        answer = self._request(inputs, mode="time", warmup=int(warmup), repeats=int(repeats), outputs=self.output_names)
        return [float(t) for t in answer["times_s"]]

    def time_texts(self, texts: list[str], runs: list[tuple[str, list[int]]], warmup: int) -> dict[str, Any] | None:
        """Tokenized in JS by the tokenizer the demo app uses (edgebert-runtime's EdgeTokenizer), timed in Node."""
        request = {"model_dir": str(self.export_dir), "mode": "texts", "texts": list(texts),
                   "runs": [[mode, list(indices)] for mode, indices in runs],
                   "warmup": int(warmup), "outputs": self.output_names, "backend": self.backend}  # fmt: skip
        answer = self._exchange(request)
        return {"tokenizer": JS_TOKENIZER, "ids": answer["ids"], "times": answer["times"]}


def keep_float16_patterns(family: Family, roles: tuple[str, ...] = ("ffn_output",)) -> list[str]:
    """tensorflowjs_converter patterns of the graph weights kept float16 under uint8: every layer's `roles` (one
    rung of `INT8_FLOAT_ISLANDS`), named in the graph by their state-dict key (`edgebert.targets.tf_graph.WeightReader`)."""
    return [f"*/{WEIGHT_SCOPE}/{pattern}/*" for role in roles for pattern in family.layer_weight_patterns(role)]


def island_rungs(quantize: str) -> tuple[tuple[str, ...], ...]:
    """The float16 island sets a conversion tries, in order: the int8 recipes' ladder under uint8, else none."""
    return INT8_FLOAT_ISLANDS if quantize == "uint8" else ((),)


def _provisional_manifest(model: LoadedModel, options: ExportOptions, reference: dict[str, np.ndarray]) -> dict[str, Any]:
    """What TFJSRunner reads of a manifest, for an export not yet written (the island guard)."""
    return {
        "inputs": [{"name": n} for n in model.family.input_names()],
        "outputs": [{"name": n, "dtype": str(v.dtype)} for n, v in reference.items()],
        "buckets": [{"seq_len": n, "model_file": model_file(n, options.seq_len)} for n in options.lengths],
        "model": {"padding_side": model.tokenizer.padding_side},
    }


def rung_guard(model: LoadedModel, options: ExportOptions) -> Callable[[Path], dict[str, Any]]:
    """A measure of one conversion directory: the guard record of its outputs in Node against PyTorch's on the guard
    texts (the island ladder goes on while its `min_cosine` is under RECIPE_MIN_COSINE; `stop_below`: see
    `base.guard_min_cosine`)."""
    from edgebert.parity import guard_inputs, torch_references

    feeds = guard_inputs(model.tokenizer, model.family.input_names(), options.seq_len)
    with cost.phase("guard reference (PyTorch)"):
        references = torch_references(model.embedder, feeds)

    def measure(converted: Path, stop_below: float | None = None) -> dict[str, Any]:
        runner = TFJSRunner(converted, _provisional_manifest(model, options, references[0]), processes=cpu.cores())
        try:
            return guard_record(feeds, guard_min_cosine(runner, feeds, references, stop_below))
        finally:
            runner.close()

    return measure


class TFJSExporter(Exporter):
    """The model's own graph (torch.export) -> TensorFlow ops (SavedModel) -> tensorflowjs_converter graph model."""

    name = "tfjs"
    quantizations = ("uint8", "float16")
    input_dtypes = ("int32",)
    install_hint = f"pip install 'edgebert[tfjs]' and {NPM_HINT}"

    def check_available(self) -> None:
        for module in ("tensorflow", "tensorflowjs"):
            if importlib.util.find_spec(module) is None:
                raise TargetUnavailable(
                    f"the tfjs target needs the '{module}' package; run pip install 'edgebert[tfjs]'"
                )
        find_node()
        check_js_packages()

    def warm_up(self) -> AbstractContextManager[None]:
        return warm(CONVERT_MODULE)

    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        rungs = island_rungs(options.quantize)
        with tempfile.TemporaryDirectory(prefix="edgebert-graph-") as graph_dir:
            with cost.phase("capture (torch.export)"):
                captured = capture_model(model, options.lengths, Path(graph_dir), self.name)
            spec = {
                "graph_dir": graph_dir,
                "seq_lens": list(options.lengths),
                "family": model.family.name,
                "outputs": list(model.output_names),
                "quantize": options.quantize,
                "attention": attention_per_bucket(options.lengths, options.tfjs_batched_attention_max_len),
                "out_dir": str(Path(work_dir).resolve()),
                "saved_model_dir": str(Path(graph_dir) / "saved_model"),
            }
            info = self._convert_rungs(model, Path(work_dir), options, rungs, spec)
        info["graph_ops"] = captured["ops"]
        attention = {int(n): form for n, form in info.pop("attention").items()}
        forms = set(info["attention_products"].values())
        info["attention_products"] = forms.pop() if len(forms) == 1 else "per_bucket"  # each bucket's: buckets[].attention
        shards = info.pop("weight_shards")
        signature = info.pop("signature")
        files = info.pop("model_files", [MODEL_FILE])
        extra = {
            "format": "tfjs_graph_model",
            "weight_shards": shards,
            "single_shard": len(shards) == 1,
            # Signature key -> graph node name: ask tfjs for `output_nodes[...]` (e.g. model.execute(feeds, [...])).
            "signature": signature,
            "output_nodes": signature["outputs"],
            "input_nodes": signature["inputs"],
            "quantization_recipe": QUANTIZATION_RECIPES[options.quantize],
            "runtime": f"@tensorflow/tfjs {TFJS_VERSION} (wasm backend in Node for verification)",
            "react_native": _bundle_resource_line(shards),
            **info,
        }
        return ConvertResult(
            files=[*files, *shards], input_dtype="int32", static_shape=True, extra=extra,
            buckets={n: {"model_file": model_file(n, options.seq_len), "attention": attention[n]} for n in options.lengths},
        )

    def _convert_rungs(
        self, model: LoadedModel, work_dir: Path, options: ExportOptions, rungs: tuple[tuple[str, ...], ...], spec: dict[str, Any]
    ) -> dict[str, Any]:
        """Convert the rungs of `rungs` one at a time (the SavedModel built once), each tested on the guard texts
        before the next is converted; the first that holds (or the last: the parity check decides) is moved into
        `work_dir`. The conversion's record, and which islands were kept when there was a choice."""
        measure = rung_guard(model, options) if len(rungs) > 1 else None
        info: dict[str, Any] = {}
        for index, roles in enumerate(rungs):
            label = f"rung {index} ({'+'.join(roles) or 'no islands'})"
            with cost.phase(f"{label}: convert (TensorFlow process)"):
                result = run_tf(
                    CONVERT_MODULE, {**spec, "islands": keep_float16_patterns(model.family, roles), "rung": index},
                    "TensorFlow/tensorflowjs conversion", CONVERT_TIMEOUT_S,
                )  # fmt: skip
            written = result.pop("written")
            info = {**result, **info}  # the first call's SavedModel record stays
            converted = work_dir / f"rung-{index}"
            with cost.phase(f"{label}: guard (Node)"):
                guard = measure(converted, RECIPE_MIN_COSINE if index < len(rungs) - 1 else None) if measure else None
            if guard is None or guard["min_cosine"] >= RECIPE_MIN_COSINE or index == len(rungs) - 1:
                break
            shutil.rmtree(converted)
        for path in converted.iterdir():
            shutil.move(str(path), str(work_dir / path.name))
        converted.rmdir()
        return {**info, **written, **({"quantization": {"float_islands": list(roles), "guard": guard}} if guard else {})}

    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        return TFJSRunner(export_dir, manifest, threads=threads)

    def kernel_paths(self, export_dir: Path, manifest: dict[str, Any]) -> dict[str, KernelPath]:
        """tfjs's wasm backend in Node, one process per core sharing the texts (its arithmetic is the same in each)."""
        return {"host": KernelPath("this machine's runtime", TFJSRunner(export_dir, manifest, processes=cpu.cores()))}
