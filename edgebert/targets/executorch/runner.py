"""ExecuTorch runner: a `model.pte`'s `forward` method in ExecuTorch's own runtime (its XNNPACK delegate on CPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgebert.targets.base import Runner, named_output


class ExecuTorchRunner(Runner):
    """A program's (a `.pte` path, or its bytes) `forward` on int64 inputs in the export's input order, outputs named
    as its manifest lists them."""

    def __init__(self, program: Path | bytes, input_names: list[str], output_names: list[str]) -> None:
        from edgebert.progress import library_chatter_kept_back

        with library_chatter_kept_back():  # the runtime's CPU probing logs, on its first load in a process
            import executorch.kernels.quantized  # noqa: F401 - the quantized tables' lookup kernels (int8 / int4)
            from executorch.runtime import Runtime

            self.program = Runtime.get().load_program(program if isinstance(program, bytes) else Path(program))
            self.method = self.program.load_method("forward")
        self.input_names, self.output_names = list(input_names), list(output_names)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        values = self.method.execute([torch.from_numpy(np.ascontiguousarray(inputs[n], dtype=np.int64)) for n in self.input_names])
        return {name: named_output(name, value.numpy()) for name, value in zip(self.output_names, values)}
