"""A TensorFlow SavedModel built from the model's own captured graph (`edgebert.targets.torch_graph`).

Runs only in a TensorFlow process (`edgebert.targets.tf_subprocess`: the TF.js converter and the TFLite fallback).
Each graph node becomes the TensorFlow ops of `edgebert.targets.tf_ops` (one function per ATen op); the parameters
become variables named by their state-dict key, shared by every signature (one per sequence length). No model class
of transformers' TensorFlow side is used: what is exported is exactly the module the parity check runs in PyTorch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edgebert.targets.tf_ops import OPS, ROW_OFFSET, ROW_SCALE, Context, Forms, ParamRef, UnsupportedOp, tf_dtype
from edgebert.targets.torch_graph import GRAPH_FILE, TENSORS_FILE, iter_refs

SIGNATURE = "serving_default"
LINEAR = "aten.linear.default"
EMBEDDING = "aten.embedding.default"
INT32_MAX = 2**31 - 1


def read_graph(graph_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The captured graph (graph.json) and its tensors (safetensors, as numpy arrays)."""
    from safetensors.numpy import load_file

    return json.loads((Path(graph_dir) / GRAPH_FILE).read_text()), load_file(str(Path(graph_dir) / TENSORS_FILE))


def read_graph_ir(graph_dir: Path) -> dict[str, Any]:
    """The captured graph (graph.json) alone, without its tensors."""
    return json.loads((Path(graph_dir) / GRAPH_FILE).read_text())


def param_shapes(graph_dir: Path) -> dict[str, list[int]]:
    """{state-dict key: shape} of the captured graph's parameters, read from the tensors file's header alone."""
    from safetensors import safe_open

    with safe_open(str(Path(graph_dir) / TENSORS_FILE), framework="numpy") as tensors:
        return {k[len("param:"):]: list(tensors.get_slice(k).get_shape()) for k in tensors.keys() if k.startswith("param:")}


def params_used_only_as(ir: dict[str, Any], op: str, position: int) -> set[str]:
    """Parameters whose every use is argument `position` of graph op `op` (by state-dict key)."""
    used, other = set(), set()
    for graph in ir["graphs"].values():
        for node in graph["nodes"]:
            for i, arg in enumerate(node["args"]):
                (used if node["op"] == op and i == position else other).update(iter_refs(arg))
            other.update(iter_refs(node["kwargs"]))
        other.update(iter_refs(list(graph["outputs"].values())))
    return {ref[6:] for ref in used - other if ref.startswith("param:")}


def dense_only_params(ir: dict[str, Any]) -> set[str]:
    """Parameters used only as the weight of Dense layers (aten.linear): stored transposed, [in, out]."""
    return params_used_only_as(ir, LINEAR, 1)


def lookup_only_params(ir: dict[str, Any], min_rows: int, shapes: dict[str, list[int]]) -> set[str]:
    """Parameters used only as the table of embedding lookups (aten.embedding), with at least `min_rows` rows."""
    keys = params_used_only_as(ir, EMBEDDING, 0)
    return {k for k in keys if len(shapes.get(k, ())) == 2 and shapes[k][0] >= min_rows}


WEIGHT_SCOPE = "w"
# Name scope of the nodes that depend on no graph input (position rows, rotary tables, relative-position biases) and
# hold more than one float: the converter folds them into constants, and the TF.js uint8 recipe keeps those float16
# (`edgebert.targets.tfjs.convert`), as they are activations, not weights.
STATIC_SCOPE = "static"


def row_codes(table: Any) -> tuple[Any, Any, Any]:
    """A [rows, width] float table as per-row uint8 codes (float32 0..255, each row spanning its own min..max) and
    [rows, 1] scales and offsets: table ≈ codes × scale + offset, within half a step of its own row."""
    import numpy as np

    table = table.astype(np.float32)
    low, high = table.min(axis=1, keepdims=True), table.max(axis=1, keepdims=True)
    scale = np.where(high > low, (high - low) / 255.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint((table - low) / scale), 0, 255).astype(np.float32)
    return codes, scale, low


def make_weights(tf: Any, tensors: dict[str, Any], transposed: set[str], row_coded: frozenset[str] = frozenset()) -> Any:
    """A tf.Module holding one variable per parameter (Dense weights as [in, out]; a row-coded table as its codes plus
    `ROW_SCALE` and `ROW_OFFSET` variables)."""
    import numpy as np

    class Weights(tf.Module):
        def __init__(self) -> None:
            super().__init__(name="weights")
            self.by_key = {}
            for ref, value in tensors.items():
                if ref.startswith("param:"):
                    key = ref[6:]
                    array = np.ascontiguousarray(value.T) if key in transposed else value
                    arrays = dict(zip((key, key + ROW_SCALE, key + ROW_OFFSET), row_codes(array))) if key in row_coded else {key: array}
                    for name, data in arrays.items():
                        self.by_key[name] = tf.Variable(_tf_value(data), trainable=False, name=scope_name(name))

    return Weights()


class WeightReader:
    """Reads each parameter once per traced graph, in the absolute name scope `w/<state-dict key>/`: the frozen graph
    names every weight by its parameter (what `tfjs_keep_float16` patterns match), and a tied weight is one tensor."""

    def __init__(self, tf: Any, weights: Any, transposed: set[str]) -> None:
        self._tf, self._weights, self._transposed = tf, weights, transposed
        self._reads: dict[str, Any] = {}

    def has_transposed(self, key: str) -> bool:
        return key in self._transposed

    def transposed(self, key: str) -> Any:
        return self._read(key)

    def plain(self, key: str) -> Any:
        if key in self._transposed:
            raise UnsupportedOp(f"parameter {key} is stored transposed for Dense layers and used otherwise")
        return self._read(key)

    def _read(self, key: str) -> Any:
        if key not in self._reads:
            with self._tf.name_scope(f"{WEIGHT_SCOPE}/{scope_name(key)}/"):
                self._reads[key] = self._weights.by_key[key].read_value()
        return self._reads[key]


def scope_name(key: str) -> str:
    """A state-dict key as a TensorFlow name (they allow letters, digits and ._-/ after the first character)."""
    import re

    return re.sub(r"[^A-Za-z0-9_.\-]", "_", key).lstrip("_.-") or "weight"


def _tf_value(array: Any) -> Any:
    """A numpy array in the dtype TensorFlow carries it in (ints as int32, refused when they do not fit)."""
    import numpy as np

    if array.dtype.kind in "iu":
        if array.size and (array.max() > INT32_MAX or array.min() < -INT32_MAX - 1):
            raise UnsupportedOp("an integer constant does not fit in int32")
        return array.astype(np.int32)
    if array.dtype.kind == "f":
        return array.astype(np.float32)
    return array


def interpret(tf: Any, graph: dict[str, Any], tensors: dict[str, Any], weights: WeightReader, feeds: dict[str, Any], forms: Forms) -> dict[str, Any]:
    """Run one captured graph in TensorFlow ops on `feeds` (int32 tensors by input name); {output name: tensor}."""
    env: dict[str, Any] = dict(feeds)
    consts: dict[str, Any] = {}
    dynamic = set(feeds)  # the inputs and every node computed from one

    def resolve(value: Any, keep_param: bool = False) -> Any:
        if isinstance(value, dict) and "ref" in value:
            ref = value["ref"]
            if ref.startswith("param:"):
                return ParamRef(ref[6:]) if keep_param else weights.plain(ref[6:])
            if ref.startswith("const:"):
                if ref not in consts:
                    consts[ref] = tf.constant(_tf_value(tensors[ref]), name=ref.rsplit(":", 1)[1].lstrip("_"))
                return consts[ref]
            return env[ref]
        if isinstance(value, dict) and "__dtype__" in value:
            return tf_dtype(tf, value["__dtype__"])
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    constants: dict[tuple[int, ...], Any] = {}  # the ops' small integer constants, one node each (tf_ops.int_constant)
    for node in graph["nodes"]:
        op = node["op"]
        if any(ref in dynamic for ref in iter_refs([node["args"], node["kwargs"]])):
            dynamic.add(node["name"])
        if op == "getitem":
            source, position = node["args"]
            env[node["name"]] = resolve(source)[position]
            continue
        if op not in OPS:
            raise UnsupportedOp(f"the graph op {op} (node {node['name']}) has no TensorFlow form in edgebert")
        args = [resolve(a, keep_param=(op == LINEAR and i == 1) or (op == EMBEDDING and i == 0)) for i, a in enumerate(node["args"])]
        kwargs = {k: v for k, v in resolve(node["kwargs"]).items() if k not in ("device", "layout", "pin_memory", "memory_format")}
        ctx = Context(tf=tf, forms=forms, shape=node["shape"], dtype=node["dtype"], weights=weights, constants=constants)
        with tf.name_scope(_scope(node, node["name"] not in dynamic)):
            env[node["name"]] = OPS[op](ctx, *args, **kwargs)
    return {name: tf.identity(resolve(ref), name=name) for name, ref in graph["outputs"].items()}


def _scope(node: dict[str, Any], static: bool) -> str:
    """A node's name scope: its name, under `STATIC_SCOPE` when it depends on no input and holds more than one float."""
    import math

    name = node["name"].lstrip("_")
    shape = node.get("shape")
    folded = static and str(node.get("dtype")).startswith(("float", "bfloat")) and isinstance(shape, list) and math.prod(shape) > 1
    return f"{STATIC_SCOPE}/{name}" if folded else name


def build_saved_model(graph_dir: Path, saved_dir: Path, signatures: dict[str, int], forms: dict[str, Forms]) -> dict[str, Any]:
    """Write a SavedModel with one signature per {name: sequence length}, each int32 [1, length] inputs -> the named
    outputs, traced with that signature's `Forms`; the signatures share the parameter variables. A summary."""
    import tensorflow as tf

    ir, tensors = read_graph(graph_dir)
    transposed = dense_only_params(ir)
    module = tf.Module()
    row_coded = frozenset().union(*(f.row_coded_tables for f in forms.values()))
    module.weights = make_weights(tf, tensors, transposed, row_coded)
    names = ir["inputs"]
    concrete = {}
    for signature, length in signatures.items():
        specs = [tf.TensorSpec([1, length], tf.int32, name=n) for n in names]
        function = tf.function(_server(tf, ir["graphs"][str(length)], tensors, module, names, forms[signature], transposed), input_signature=specs, autograph=False)
        setattr(module, f"serve_{signature}", function)
        concrete[signature] = function.get_concrete_function()
    tf.saved_model.save(module, str(saved_dir), signatures=concrete)
    return {
        "tensorflow": tf.__version__,
        "graph_source": "torch.export of the exported module (edgebert.targets.torch_graph), written in TensorFlow ops",
        "dense_weights_transposed": len(transposed),
    }


def _server(tf: Any, graph: dict[str, Any], tensors: dict[str, Any], module: Any, names: list[str], forms: Forms, transposed: set[str]) -> Any:
    """The Python function one signature traces: its graph on positional int32 inputs."""

    def serve(*feeds: Any) -> dict[str, Any]:
        reader = WeightReader(tf, module.weights, transposed)
        return interpret(tf, graph, tensors, reader, dict(zip(names, feeds)), forms)

    return serve


def run_graph(graph_dir: Path, length: int, feeds: dict[str, Any], forms: Forms) -> dict[str, Any]:
    """The captured graph at `length` run eagerly in TensorFlow on numpy `feeds` (int32 [1, length]); numpy outputs.
    For checking the TensorFlow forms against PyTorch without a SavedModel or a converter in between."""
    import tensorflow as tf

    ir, tensors = read_graph(graph_dir)
    transposed = dense_only_params(ir)
    reader = WeightReader(tf, make_weights(tf, tensors, transposed, forms.row_coded_tables), transposed)
    tf_feeds = {n: tf.constant(feeds[n], dtype=tf.int32) for n in ir["inputs"]}
    outputs = interpret(tf, ir["graphs"][str(length)], tensors, reader, tf_feeds, forms)
    return {name: value.numpy() for name, value in outputs.items()}
