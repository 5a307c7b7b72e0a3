"""ExecuTorch target exporter: `torch.export` of the module every target exports (the sentence-transformers stack or
the task head in the graph), with dynamic batch and sequence dimensions up to `--seq-len`, lowered with the XNNPACK
partitioner into one `model.pte` that react-native-executorch loads; fp32, or the int8 / int4 recipes of
quantize.py (dynamically quantized Linear layers). A family whose graph torch.export cannot keep free in the sequence
(`Family.dynamic_sequence`: XLNet's relative shift) gets one program at `--seq-len` tokens, inputs padded to it on the
tokenizer's side, as the static targets are."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from edgebert import buckets, cost
from edgebert.errors import TargetUnavailable, UserError
from edgebert.modelio import LoadedModel
from edgebert.targets.base import ConvertResult, Exporter, ExportOptions, KernelPath, Runner
from edgebert.targets.executorch.runner import MAX_BATCH, ExecuTorchRunner

MODEL_FILE = "model.pte"


class ExecuTorchExporter(Exporter):
    """One `model.pte`: the embedder's graph with XNNPACK-delegated kernels, dynamic batch and sequence."""

    name = "executorch"
    quantizations = ("int8", "int4", "w4a8")
    input_dtypes = ("int64",)
    arm64_recipes = ("int8", "int4", "w4a8")
    install_hint = "pip install 'edgebert[executorch]'"

    def check_available(self) -> None:
        if importlib.util.find_spec("executorch") is None:
            raise TargetUnavailable(f"the executorch target needs the 'executorch' package; run {self.install_hint}")

    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        import importlib.metadata

        from edgebert.progress import library_chatter_kept_back

        names, outputs = model.family.input_names(), list(model.output_names)
        dynamic = model.family.dynamic_sequence
        if not dynamic and len(options.lengths) > 1:
            raise UserError(f"{model.family.name} exports to executorch at one sequence length (its graph fixes the length); pass one --seq-len")
        extra: dict[str, Any] = {
            "runtime": f"executorch {importlib.metadata.version('executorch')}", "delegate": "XNNPACK",
            "method": "forward", "max_batch": MAX_BATCH, "max_seq_len": options.seq_len,
        }  # fmt: skip
        lower = lambda m: _lowered(m, names, options.seq_len, dynamic)  # noqa: E731
        with library_chatter_kept_back():  # torch.export and the lowering's warnings and C++ logs
            if options.quantize == "none":
                with cost.phase("capture + lower (torch.export, XNNPACK)"):
                    program = lower(model.embedder)
            else:
                from edgebert.parity import guard_inputs
                from edgebert.targets.executorch.quantize import quantize_with_islands

                program, extra["quantization"] = quantize_with_islands(
                    model.embedder, model.family, options.quantize, lower,
                    lambda data: ExecuTorchRunner(data, names, outputs),
                    guard_inputs(model.tokenizer, names, options.seq_len, padded=not dynamic),
                )  # fmt: skip
        extra.update(operator_needs(program))
        (work_dir / MODEL_FILE).write_bytes(program)
        fixed = {} if dynamic else {options.seq_len: {"method": "forward"}}  # one program of one length: its bucket
        return ConvertResult(files=[MODEL_FILE], input_dtype="int64", static_shape=not dynamic, extra=extra, buckets=fixed)

    def arm64_unchecked(self, manifest: dict[str, Any]) -> str | None:
        """The ARM64 path's reason (`Exporter.arm64_unchecked`), or that ExecuTorch's aarch64 runtime is missing."""
        reason = super().arm64_unchecked(manifest)
        if reason is not None or manifest["quantization"] not in self.arm64_recipes:
            return reason
        from edgebert import arm64

        return arm64.executorch_problem()

    def kernel_paths(self, export_dir: Path, manifest: dict[str, Any]) -> dict[str, KernelPath]:
        """The host's runtime, and ExecuTorch's aarch64 runtime on the ARM64 CPU models (emulated) for the integer
        recipes: XNNPACK picks its int8 kernels by the CPU's features."""
        paths = super().kernel_paths(export_dir, manifest)
        if self.arm64_runs(manifest):
            from edgebert.targets import arm64_paths

            inputs, outputs, static = _program_io(manifest)
            path = Path(export_dir) / MODEL_FILE
            paths.update(arm64_paths.executorch_paths(path, (inputs, outputs), static, buckets.padding_side(manifest)))
        return paths

    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        inputs, outputs, static = _program_io(manifest)
        return ExecuTorchRunner(Path(export_dir) / MODEL_FILE, inputs, outputs, static, buckets.padding_side(manifest))


def _program_io(manifest: dict[str, Any]) -> tuple[list[str], list[str], int | None]:
    """A program's input and output names in order, and its one fixed length (None: dynamic), from its manifest."""
    static = int(manifest["seq_len"]) if manifest.get("static_shape") else None
    return [i["name"] for i in manifest["inputs"]], [o["name"] for o in manifest["outputs"]], static


# The kernel library each operator namespace of a program comes from, and the Python module that registers it in the
# stock runtime (None: the runtime's own portable kernels and prim ops, registered by `executorch.runtime` itself).
KERNEL_LIBRARIES = {"aten": "portable", "dim_order_ops": "portable", "executorch_prim": "prim", "quantized_decomposed": "quantized"}
PYTHON_REGISTRATION = {"portable": None, "prim": None, "quantized": "executorch.kernels.quantized"}
BUILT_IN = ("portable", "prim")  # what every ExecuTorch runtime has besides its delegates


def operator_needs(program: bytes) -> dict[str, Any]:
    """What a `.pte` needs of the runtime that loads it: its delegates, the operators it runs outside them (by kernel
    library, `KERNEL_LIBRARIES`), and `kernel_libraries`: the libraries beyond the portable kernels and the delegates
    (an int8 or 4-bit table's lookup: `quantized`), which a runtime must register or fail to load the method (0x14)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    plans = deserialize_pte_binary(program).program.execution_plan
    by_library: dict[str, set[str]] = {}
    for op in (op for plan in plans for op in plan.operators):
        namespace = op.name.split("::")[0]
        by_library.setdefault(KERNEL_LIBRARIES.get(namespace, namespace), set()).add(f"{op.name}.{op.overload}" if op.overload else op.name)
    return {
        "delegates": sorted({d.id for plan in plans for d in plan.delegates}),
        "operators": {library: sorted(ops) for library, ops in sorted(by_library.items())},
        "kernel_libraries": sorted(library for library in by_library if library not in BUILT_IN),
    }


def _lowered(module: Any, names: list[str], seq_len: int, dynamic_sequence: bool = True) -> bytes:
    """`module` under torch.export (batch in [1, MAX_BATCH], sequence in [2, seq_len] left free, or fixed at `seq_len`
    when not `dynamic_sequence`), lowered to XNNPACK: the `.pte` bytes."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    from torch.export import Dim, export

    batch, sequence = Dim("batch", min=1, max=MAX_BATCH), Dim("sequence", min=2, max=seq_len)
    sample = tuple(torch.ones(2, min(seq_len, 16) if dynamic_sequence else seq_len, dtype=torch.long) for _ in names)
    shapes = tuple({0: batch, 1: sequence} if dynamic_sequence else {0: batch} for _ in names)
    with torch.no_grad():
        exported = export(module.eval(), sample, dynamic_shapes=shapes, strict=False)
    # The edge dialect's validity check runs the graph on fake inputs, and on ModernBERT's attention masks that pins
    # the batch dimension to the sample's (the program then refuses one text); the runtime parity check that follows
    # every export is the check that matters.
    config = EdgeCompileConfig(_check_ir_validity=False)
    return bytes(to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()], compile_config=config).to_executorch().buffer)
