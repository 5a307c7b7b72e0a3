"""XNNPACK's int8 and 4-bit linear kernels side by side in ExecuTorch: a block of five Linears shaped like the `small`
student's (384 -> 448 twice, 448 -> 384, 384 -> 512 -> 384) at 128 tokens, quantized by torchao as each ExecuTorch
recipe does (8da8w per channel; 8da4w in groups of 32; 8da4w per channel), lowered with the XNNPACK partitioner and
timed in ExecuTorch's runtime, one call after another, the recipes in turn (two rounds).

    python benchmarks/experiments/et_4bit_kernels.py [ROUNDS] [CALLS]
"""

import copy
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.ModuleList([nn.Linear(384, 448), nn.Linear(384, 448), nn.Linear(448, 384), nn.Linear(384, 512), nn.Linear(512, 384)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.l[0](x) + self.l[1](x)
        return self.l[4](torch.relu(self.l[3](self.l[2](y))))


def configs() -> dict:
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, MappingType
    from torchao.quantization.granularity import PerAxis, PerGroup

    no_clip = MappingType.SYMMETRIC_NO_CLIPPING_ERR
    return {
        "int8 (8da8w per channel)": Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0)),
        "int4 (8da4w, groups of 32)": Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(32), weight_mapping_type=no_clip),
        "w4a8 (8da4w per channel)": Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerAxis(0), weight_mapping_type=no_clip),
    }


def main() -> None:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime
    from torchao.quantization import quantize_

    rounds, calls = (int(a) for a in (sys.argv[1:3] + ["2", "100"][len(sys.argv[1:3]):]))
    torch.manual_seed(0)
    base, x = Block().eval(), torch.randn(1, 128, 384)
    runtime, methods = Runtime.get(), {}
    with tempfile.TemporaryDirectory() as scratch:
        for k, (name, config) in enumerate(configs().items()):
            module = copy.deepcopy(base)
            quantize_(module, config)
            program = to_edge_transform_and_lower(torch.export.export(module, (x,)), partitioner=[XnnpackPartitioner()]).to_executorch()
            path = Path(scratch) / f"{k}.pte"
            path.write_bytes(program.buffer)
            loaded = runtime.load_program(str(path))
            methods[name] = (loaded, loaded.load_method("forward"), path.stat().st_size)
        print(f"torch {torch.__version__}; 5 Linears at 128 tokens, batch 1; median of {calls} calls")
        print("| recipe | .pte bytes | " + " | ".join(f"round {r + 1} ms" for r in range(rounds)) + " |")
        print("|---|---|" + "---|" * rounds)
        medians: dict[str, list[float]] = {name: [] for name in methods}
        for _ in range(rounds):
            for name, (_, method, _) in methods.items():
                for _ in range(10):
                    method.execute([x])
                times = []
                for _ in range(calls):
                    start = time.perf_counter()
                    method.execute([x])
                    times.append(time.perf_counter() - start)
                medians[name].append(float(np.median(times)) * 1e3)
        for name, (_, _, size) in methods.items():
            print(f"| {name} | {size} | " + " | ".join(f"{m:.3f}" for m in medians[name]) + " |")


if __name__ == "__main__":
    main()
