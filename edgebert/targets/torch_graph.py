"""The model's own computation as a portable graph: `torch.export` of the module every target traces, at one static
input shape per sequence length, written as JSON nodes plus one safetensors file of tensors.

This is what the TensorFlow-based targets (TF.js, the TFLite fallback) build from (`edgebert.targets.tf_graph`):
the same module the ONNX and TFLite exports trace and the parity check runs, so an architecture, a
sentence-transformers stack or a task head that torch can export is the graph, whatever transformers version
defined it. No model class from transformers' TensorFlow side is involved (transformers 5 has none).

What the capture does beyond `torch.export`:
- parameters stay named by their state-dict key (one tensor each, shared by every length);
- every node that depends on no graph input and no parameter (position-id ranges, mask templates, buffers) is
  computed here, once, and becomes a constant;
- nodes that compute nothing in inference (clone, dropout, contiguous, same-dtype casts, shape asserts) are dropped.

Graph file (`graph.json`): {"inputs": [names], "graphs": {length: {"nodes": [...], "outputs": {name: ref}}}}. A node is
{"name", "op" (the ATen overload, e.g. "aten.linear.default"), "args", "kwargs", "shape", "dtype"}; an argument that is
another value is {"ref": name}, a dtype {"__dtype__": "float32"}; a ref names a graph input, a node, a parameter
("param:<key>") or a constant ("const:<length>:<node>").
"""

from __future__ import annotations

import json
import operator
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GRAPH_FILE = "graph.json"
TENSORS_FILE = "tensors.safetensors"
# Ops that compute nothing at inference: the node is its first argument.
PASS_THROUGH = {
    "aten.clone.default", "aten.contiguous.default", "aten.dropout.default", "aten.alias.default",
    "aten.detach.default", "aten.lift_fresh_copy.default", "aten.lift_fresh.default",
}  # fmt: skip
# Ops written as the products, transposes and reshapes they compute (torch's own decomposition): XLNet's
# attention is einsum over [length, batch, heads, size] layouts, which the TensorFlow side would otherwise need
# einsum for (TF.js runs tf.einsum on its slow generic kernels).
DECOMPOSED = {"aten.einsum.default"}
DROPPED = {"aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default"}


class UnsupportedGraph(ValueError):
    """The exported program holds something the graph format cannot carry (named in the message)."""


def _int32_wrapper(module: Any, input_names: list[str]) -> Any:
    """`module` behind int32 keyword inputs (cast to int64 inside, as transformers expects) and a tuple output."""
    import torch

    class Int32Inputs(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, **feeds: torch.Tensor) -> Any:
            return self.inner(*[feeds[n].long() for n in input_names])

    return Int32Inputs(module).eval()


def export_program(module: Any, input_names: list[str], length: int) -> Any:
    """`torch.export` of `module` at int32 inputs [1, length], decomposed to ATen ops; of the higher decompositions only
    einsum's (`DECOMPOSED`)."""
    import torch

    sample = {n: torch.ones(1, length, dtype=torch.int32) for n in input_names}
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        program = torch.export.export(_int32_wrapper(module, input_names), (), kwargs=sample, strict=False)
        table = torch.export.default_decompositions()
        return program.run_decompositions({op: table[op] for op in table if str(op) in DECOMPOSED})


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


class _Capture:
    """Walks one exported program, folding what is constant, and records nodes, parameters and constants."""

    def __init__(self, program: Any, length: int, params: dict[str, Any]) -> None:
        self.length = length
        self.params = params  # state-dict key -> tensor, shared across lengths
        self.consts: dict[str, Any] = {}  # const ref -> tensor, this length's
        self.values: dict[str, Any] = {}  # fx node name -> ("ref", name) | ("const", tensor)
        self.nodes: list[dict[str, Any]] = []
        self.program = program

    def run(self) -> dict[str, Any]:
        self._placeholders()
        for node in self.program.graph.nodes:
            if node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                return {"nodes": self.nodes, "outputs": self._outputs(node)}
        raise UnsupportedGraph("the exported program has no output")

    def _placeholders(self) -> None:
        import torch

        signature, state = self.program.graph_signature, self.program.state_dict
        constants = getattr(self.program, "constants", {}) or {}
        for spec in signature.input_specs:
            name, kind = spec.arg.name, spec.kind.name
            if kind == "USER_INPUT":
                self.values[name] = ("ref", name)
            elif kind == "PARAMETER":
                key = spec.target.split(".", 1)[1]  # drop the int32 wrapper's "inner."
                self.params.setdefault(key, state[spec.target].detach())
                self.values[name] = ("ref", f"param:{key}")
            elif kind in ("BUFFER", "CONSTANT_TENSOR"):
                tensor = state[spec.target] if spec.target in state else constants[spec.target]
                self.values[name] = ("const", torch.as_tensor(tensor).detach())
            else:
                raise UnsupportedGraph(f"unsupported graph input kind {kind} ({spec.target})")

    def _call(self, node: Any) -> None:
        op = str(node.target)
        if op in DROPPED:
            return
        if op in PASS_THROUGH or (op == "aten._to_copy.default" and self._same_dtype(node)):
            self.values[node.name] = self._value(node.args[0])
            return
        refs = [self._value(a) for a in _fx_nodes((node.args, node.kwargs))]
        if all(kind == "const" for kind, _ in refs):
            self.values[node.name] = ("const", self._evaluate(node))
            return
        self.values[node.name] = ("ref", node.name)
        meta = node.meta.get("val")
        self.nodes.append({
            "name": node.name, "op": "getitem" if node.target is operator.getitem else op,
            "args": self._encode(node.args), "kwargs": self._encode(node.kwargs),
            "shape": list(meta.shape) if hasattr(meta, "shape") else None,
            "dtype": _dtype_name(meta.dtype) if hasattr(meta, "dtype") else None,
        })  # fmt: skip

    def _same_dtype(self, node: Any) -> bool:
        source, meta = node.args[0].meta.get("val"), node.meta.get("val")
        return hasattr(source, "dtype") and hasattr(meta, "dtype") and source.dtype == meta.dtype

    def _value(self, fx_node: Any) -> tuple[str, Any]:
        if fx_node.name not in self.values:
            raise UnsupportedGraph(f"node {fx_node.name} ({fx_node.target}) is used before it is defined")
        return self.values[fx_node.name]

    def _evaluate(self, node: Any) -> Any:
        """Run a node whose inputs are all constants, here and now."""
        import torch

        def concrete(value: Any) -> Any:
            if hasattr(value, "op") and hasattr(value, "name"):
                return self._value(value)[1]
            if isinstance(value, (list, tuple)):
                return type(value)(concrete(v) for v in value)
            if isinstance(value, dict):
                return {k: concrete(v) for k, v in value.items()}
            return value

        with torch.no_grad():
            return node.target(*concrete(node.args), **concrete(node.kwargs))

    def _encode(self, value: Any) -> Any:
        """JSON for an argument: refs for values (constants registered under this length), dtypes by name."""
        import torch

        if hasattr(value, "op") and hasattr(value, "name"):
            kind, payload = self._value(value)
            return {"ref": payload if kind == "ref" else self._const(value.name, payload)}
        if isinstance(value, (list, tuple)):
            return [self._encode(v) for v in value]
        if isinstance(value, dict):
            return {k: self._encode(v) for k, v in value.items()}
        if isinstance(value, torch.dtype):
            return {"__dtype__": _dtype_name(value)}
        if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
            return None
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise UnsupportedGraph(f"an argument of type {type(value).__name__} cannot be written to the graph")

    def _const(self, name: str, tensor: Any) -> str:
        import torch

        if isinstance(tensor, (tuple, list)):
            raise UnsupportedGraph(f"constant {name} is a tuple")
        ref = f"const:{self.length}:{name}"
        self.consts[ref] = torch.as_tensor(tensor)
        return ref

    def _outputs(self, node: Any) -> list[Any]:
        outputs = node.args[0]
        encoded = []
        for value in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
            encoded.append(self._encode(value))
        return encoded


def _fx_nodes(value: Any) -> list[Any]:
    """The fx nodes inside an argument structure."""
    if hasattr(value, "op") and hasattr(value, "name"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _fx_nodes(v)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _fx_nodes(v)]
    return []


def capture(module: Any, input_names: list[str], output_names: list[str], lengths: list[int], out_dir: Path) -> dict:
    """Write `module`'s graph at each length (int32 inputs [1, length]) into `out_dir`: graph.json + tensors.safetensors.

    Returns a summary (ops used, parameters, constants)."""
    from safetensors.torch import save_file

    params: dict[str, Any] = {}
    graphs, consts = {}, {}
    for length in lengths:
        walk = _Capture(export_program(module, input_names, length), length, params)
        graph = walk.run()
        if len(graph["outputs"]) != len(output_names):
            raise UnsupportedGraph(f"the module returns {len(graph['outputs'])} outputs, the export names {output_names}")
        graph["outputs"] = dict(zip(output_names, graph["outputs"]))
        graphs[str(length)] = graph
        consts.update(walk.consts)
    used = {ref for g in graphs.values() for ref in _refs(g)}
    tensors = {f"param:{k}": v for k, v in params.items() if f"param:{k}" in used}
    tensors.update({k: v for k, v in consts.items() if k in used})
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().clone().contiguous() for k, v in tensors.items()}, str(out_dir / TENSORS_FILE))
    (out_dir / GRAPH_FILE).write_text(json.dumps({"inputs": list(input_names), "graphs": graphs}))
    ops = sorted({n["op"] for g in graphs.values() for n in g["nodes"]})
    return {"ops": ops, "parameters": sum(k.startswith("param:") for k in tensors), "constants": sum(k.startswith("const:") for k in tensors)}


def iter_refs(value: Any) -> Iterator[str]:
    """Every ref (graph input, node, "param:<key>", "const:...") inside an encoded argument structure."""
    if isinstance(value, dict):
        if "ref" in value:
            yield value["ref"]
        for v in value.values():
            yield from iter_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from iter_refs(v)


def _refs(graph: dict[str, Any]) -> set[str]:
    return set(iter_refs([[n["args"], n["kwargs"]] for n in graph["nodes"]] + list(graph["outputs"].values())))


def capture_model(model: Any, lengths: tuple[int, ...], graph_dir: Path, target: str) -> dict[str, Any]:
    """`capture` of a `LoadedModel`'s exported module (its input and output names), or TargetUnavailable naming
    `target` when its graph holds something the graph format cannot carry."""
    from edgebert.errors import TargetUnavailable

    try:
        return capture(model.embedder, model.family.input_names(), list(model.output_names), list(lengths), graph_dir)
    except UnsupportedGraph as exc:
        raise TargetUnavailable(f"the {target} target cannot carry this model's graph: {exc}") from exc
