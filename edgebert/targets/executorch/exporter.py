"""ExecuTorch target exporter: `torch.export` of the module every target exports (the sentence-transformers stack or
the task head in the graph), with dynamic batch and sequence dimensions up to `--seq-len`, lowered with the XNNPACK
partitioner into one `model.pte` that react-native-executorch loads; fp32, or the int8 / int4 recipes of
quantize.py (dynamically quantized Linear layers)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from edgebert.errors import TargetUnavailable
from edgebert.modelio import LoadedModel
from edgebert.targets.base import ConvertResult, Exporter, ExportOptions, Runner
from edgebert.targets.executorch.runner import ExecuTorchRunner

MODEL_FILE = "model.pte"
MAX_BATCH = 64  # the largest batch the program accepts (apps run one text; parity checks a few at once)


class ExecuTorchExporter(Exporter):
    """One `model.pte`: the embedder's graph with XNNPACK-delegated kernels, dynamic batch and sequence."""

    name = "executorch"
    quantizations = ("int8", "int4")
    install_hint = "pip install 'edgebert[executorch]'"

    def check_available(self) -> None:
        if importlib.util.find_spec("executorch") is None:
            raise TargetUnavailable(f"the executorch target needs the 'executorch' package; run {self.install_hint}")

    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        import importlib.metadata

        from edgebert.progress import library_chatter_kept_back

        names, outputs = model.family.input_names(), list(model.output_names)
        extra: dict[str, Any] = {
            "runtime": f"executorch {importlib.metadata.version('executorch')}", "delegate": "XNNPACK",
            "method": "forward", "max_batch": MAX_BATCH, "max_seq_len": options.seq_len,
        }  # fmt: skip
        with library_chatter_kept_back():  # torch.export and the lowering's warnings and C++ logs
            if options.quantize == "none":
                program = _lowered(model.embedder, names, options.seq_len)
            else:
                from edgebert.parity import guard_inputs
                from edgebert.targets.executorch.quantize import quantize_with_islands

                program, extra["quantization"] = quantize_with_islands(
                    model.embedder, model.family, options.quantize, lambda m: _lowered(m, names, options.seq_len),
                    lambda data, feed: ExecuTorchRunner(data, names, outputs).run(feed),
                    guard_inputs(model.tokenizer, names, options.seq_len),
                )  # fmt: skip
        (work_dir / MODEL_FILE).write_bytes(program)
        return ConvertResult(files=[MODEL_FILE], input_dtype="int64", static_shape=False, extra=extra)

    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        names = [i["name"] for i in manifest["inputs"]]
        outputs = [o["name"] for o in manifest["outputs"]]
        return ExecuTorchRunner(Path(export_dir) / MODEL_FILE, names, outputs)


def _lowered(module: Any, names: list[str], seq_len: int) -> bytes:
    """`module` under torch.export (batch in [1, MAX_BATCH], sequence in [2, seq_len] left free), lowered to XNNPACK:
    the `.pte` bytes."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from torch.export import Dim, export

    batch, sequence = Dim("batch", min=1, max=MAX_BATCH), Dim("sequence", min=2, max=seq_len)
    sample = tuple(torch.ones(2, min(seq_len, 16), dtype=torch.long) for _ in names)
    shapes = tuple({0: batch, 1: sequence} for _ in names)
    with torch.no_grad():
        exported = export(module.eval(), sample, dynamic_shapes=shapes, strict=False)
    return bytes(to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)
