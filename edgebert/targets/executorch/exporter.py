"""ExecuTorch target exporter: `torch.export` of the module every target exports (the sentence-transformers stack or
the task head in the graph), with dynamic batch and sequence dimensions up to `--seq-len`, lowered with the XNNPACK
partitioner into one `model.pte` that react-native-executorch loads. fp32; the integer recipes are not built yet."""

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
    quantizations = ()
    install_hint = "pip install 'edgebert[executorch]'"

    def check_available(self) -> None:
        if importlib.util.find_spec("executorch") is None:
            raise TargetUnavailable(f"the executorch target needs the 'executorch' package; run {self.install_hint}")

    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        import executorch
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower

        from edgebert.progress import library_chatter_kept_back

        with library_chatter_kept_back():  # torch.export and the lowering's warnings and C++ logs
            program = to_edge_transform_and_lower(_exported(model, options.seq_len), partitioner=[XnnpackPartitioner()]).to_executorch()
        (work_dir / MODEL_FILE).write_bytes(program.buffer)
        extra: dict[str, Any] = {
            "runtime": f"executorch {getattr(executorch, '__version__', 'unknown')}", "delegate": "XNNPACK",
            "method": "forward", "max_batch": MAX_BATCH, "max_seq_len": options.seq_len,
        }  # fmt: skip
        return ConvertResult(files=[MODEL_FILE], input_dtype="int64", static_shape=False, extra=extra)

    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        names = [i["name"] for i in manifest["inputs"]]
        outputs = [o["name"] for o in manifest["outputs"]]
        return ExecuTorchRunner(Path(export_dir) / MODEL_FILE, names, outputs)


def _exported(model: LoadedModel, seq_len: int) -> Any:
    """The embedder under torch.export, batch in [1, MAX_BATCH] and sequence in [2, seq_len] left free."""
    import torch
    from torch.export import Dim, export

    names = model.family.input_names()
    batch, sequence = Dim("batch", min=1, max=MAX_BATCH), Dim("sequence", min=2, max=seq_len)
    sample = tuple(torch.ones(2, min(seq_len, 16), dtype=torch.long) for _ in names)
    shapes = tuple({0: batch, 1: sequence} for _ in names)
    with torch.no_grad():
        return export(model.embedder.eval(), sample, dynamic_shapes=shapes, strict=False)
