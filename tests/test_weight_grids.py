"""Weight grids (edgebert/weight_grids.py): each is its runtime quantizer's own rule, bit for bit; a student trained on
one (`distill --weight-grid`) is saved on it, and its 4-bit export then computes it exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from edgebert.errors import UserError
from edgebert.weight_grids import (
    GRIDS,
    grid_for,
    grid_named,
    litert_blockwise_int4,
    litert_channelwise_int4,
    off_grid,
    onnxruntime_symmetric_int4,
)


def _ort_matmul_int4(w_kn: np.ndarray, block: int) -> np.ndarray:
    """onnxruntime's C++ MatMul quantizer (blocks along K of a [K, N] weight), dequantized back to [K, N]."""
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits

    k, n = w_kn.shape
    blocks = (k + block - 1) // block
    padded = np.zeros((blocks * block, n), np.float32)
    padded[:k] = w_kn
    packed, zero = np.zeros((n, blocks, block // 2), np.uint8), np.zeros((n, (blocks + 1) // 2), np.uint8)
    scales = np.zeros((n, blocks), np.float32)
    quantize_matmul_4bits(packed, padded, scales, zero, block, n, blocks * block, True)
    q = (np.stack([packed & 0x0F, packed >> 4], -1).reshape(n, blocks, block).astype(np.int32) - 8).astype(np.float32)
    return (q * scales[:, :, None]).reshape(n, -1)[:, :k].T  # dequantized in float32, as the kernel does


@pytest.mark.parametrize("k", [64, 80])  # 80: a last block of 16, as a pruned FFN's 507 inputs leave
def test_the_onnx_grid_is_onnxruntimes_matmul_rounding(k: int) -> None:
    w = torch.randn(24, k, generator=torch.Generator().manual_seed(k)) * 0.05  # a Linear's [out, in]
    w[3, :32] = 0  # an all-zero block: scale 0, stays 0
    ours = onnxruntime_symmetric_int4(w, 32).numpy()
    theirs = _ort_matmul_int4(np.ascontiguousarray(w.numpy().T), 32).T
    assert np.array_equal(ours, theirs)
    assert not np.array_equal(ours, w.numpy())  # it did round
    assert torch.equal(onnxruntime_symmetric_int4(torch.from_numpy(ours), 32), torch.from_numpy(ours))  # idempotent


def test_the_onnx_grid_is_onnxruntimes_table_rounding() -> None:
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantizer

    table = torch.randn(50, 80, generator=torch.Generator().manual_seed(1))  # [rows, hidden], blocks along hidden
    q4, scales, _ = DefaultWeightOnlyQuantizer.quantize_ndarray(table.numpy(), 1, 32, True)
    q = np.stack([q4.view(np.uint8) & 0x0F, q4.view(np.uint8) >> 4], -1).reshape(-1)[: table.numel()].astype(np.int8)
    q = np.where(q > 7, q - 16, q).reshape(50, 80)  # two's-complement nibbles
    theirs = q.astype(np.float32) * np.repeat(scales, 32, axis=1)[:, :80]
    assert np.array_equal(onnxruntime_symmetric_int4(table, 32).numpy(), theirs)


def _aeq_blockwise_int4(w: np.ndarray) -> np.ndarray:
    """ai-edge-quantizer's own blockwise 4-bit rounding of a [out, in] weight (blocks of 32 along in), dequantized."""
    from ai_edge_quantizer import qtyping
    from ai_edge_quantizer.algorithms.uniform_quantize import uniform_quantize_tensor as uqt

    blocks = w.reshape(w.shape[0], -1, 32)
    zero, scale = uqt.tensor_zp_scale_from_min_max(blocks.min(-1), blocks.max(-1), 4, True, qtyping.QuantGranularity.BLOCKWISE_32)
    params = qtyping.UniformQuantParams(num_bits=4, quantized_dimension=1, scale=scale, zero_point=zero, symmetric=True, block_size=32)
    with np.errstate(invalid="ignore"):  # an all-zero block: scale 0 (0 / 0 quantized), dequantized to 0
        return uqt.uniform_dequantize(uqt.uniform_quantize(w, params, is_blockwise_quant=True), params)


def test_the_tflite_rule_is_ai_edge_quantizers_blockwise_rounding() -> None:
    w = torch.randn(24, 96, generator=torch.Generator().manual_seed(2)) * 0.05  # a Linear's [out, in] (or a table)
    w[3, :32] = 0
    w[5, 40] = 3.0  # an outlier: its block's scale, rounded to bfloat16
    ours = litert_blockwise_int4(w).numpy()
    assert np.array_equal(ours, _aeq_blockwise_int4(w.numpy())) and not np.array_equal(ours, w.numpy())
    assert torch.equal(litert_blockwise_int4(torch.from_numpy(ours)), torch.from_numpy(ours))  # idempotent
    odd = torch.randn(24, 507)  # no blockwise form in the quantizer: stored int8, left as it is
    assert torch.equal(litert_blockwise_int4(odd), odd)


def test_the_tflite_w4a8_rule_is_ai_edge_quantizers_channelwise_rounding() -> None:
    from ai_edge_quantizer import qtyping
    from ai_edge_quantizer.algorithms.uniform_quantize import uniform_quantize_tensor as uqt

    w = torch.randn(24, 96, generator=torch.Generator().manual_seed(3)) * 0.05  # a Linear's [out, in] (or a table)
    w[3] = 0  # an all-zero row: scale 0, stays 0
    w[5, 40] = 3.0  # an outlier: its row's scale
    x = w.numpy()
    zero, scale = uqt.tensor_zp_scale_from_min_max(x.min(1, keepdims=True), x.max(1, keepdims=True), 4, True, qtyping.QuantGranularity.CHANNELWISE)
    params = qtyping.UniformQuantParams(num_bits=4, quantized_dimension=0, scale=scale, zero_point=zero, symmetric=True)
    with np.errstate(invalid="ignore"):
        theirs = uqt.uniform_dequantize(uqt.uniform_quantize(x, params), params)
    ours = litert_channelwise_int4(w).numpy()
    assert np.array_equal(ours, theirs) and not np.array_equal(ours, x)
    assert torch.allclose(litert_channelwise_int4(torch.from_numpy(ours)), torch.from_numpy(ours), rtol=1e-6, atol=0)
    odd = torch.randn(24, 507)  # stored int8 by the recipe (no fast 4-bit kernel): the grid leaves it as it is
    assert torch.equal(GRIDS["tflite-w4a8"].linear(odd, 32), odd)


def test_an_unknown_grid_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match="unknown weight grid .tflite-int3.; choose one of: onnx-int4, executorch-int4, onnx-w4a8, executorch-w4a8, tflite-w4a8"):
        grid_named("tflite-int3")
    assert set(GRIDS) == {"onnx-int4", "executorch-int4", "onnx-w4a8", "executorch-w4a8", "tflite-w4a8"}
    assert grid_for("onnx", "w4a8") is GRIDS["onnx-w4a8"] and grid_for("tflite", "w4a8") is GRIDS["tflite-w4a8"]
    assert grid_for("onnx", "int4") is GRIDS["onnx-int4"] and grid_for("tflite", "int4") is None


def test_a_student_trained_on_the_grid_exports_to_onnx_int4_exactly(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    from edgebert.distill import distill
    from edgebert.export import export
    from edgebert.modelio import load_model

    student, sts = tmp_path / "student", tmp_path / "sts.csv"
    sts.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\nthe man,the woman,2\n")
    distill(tiny_bert, tiny_corpus, student, weight_grid="onnx-int4", steps=4, batch_size=4, seq_len=24, student_layers=1,
            alpha_mlm=0, alpha_ce=0, mlm_probability=0, alpha_cos=1, eval_sts=sts, eval_steps=2, save_steps=2, quiet=True)  # fmt: skip
    # (the best checkpoint on the STS pairs is loaded back at the end, with the grid still on: tied tables included)
    manifest = json.loads((student / "edgebert.json").read_text())
    assert manifest["model"]["weight_grid"]["name"] == "onnx-int4" and manifest["recipe"]["weight_grid"] == "onnx-int4"
    moved = off_grid(load_model(student).embedder, GRIDS["onnx-int4"])
    assert moved == ["encoder.pooler.dense"]  # every Linear and table is a grid point but the loader's fresh pooler (unused)
    report = export("onnx", student, tmp_path / "int4", quantize="int4", quiet=True)
    quantization = report.manifest["target_details"]["quantization"]
    assert quantization["float_islands"] == []  # nothing left in float
    assert report.manifest["parity"]["min_cosine"] >= 0.9999


@pytest.mark.parametrize("k", [64, 507])  # 507: a pruned FFN's inputs, which XNNPACK cannot group at 4 bits
def test_the_executorch_grid_is_what_its_int4_recipe_stores(k: int) -> None:
    """The ExecuTorch int4 recipe's Linear weights (torchao's quantize_) and tables (`table_storage`) dequantize to the
    grid, and the grid maps its own points to themselves (a scale recomputed from them, max / 7, can move by an ulp);
    a Linear 32 does not divide is stored int8 and left off the grid."""
    from torch import nn

    from edgebert.families import BERT
    from edgebert.targets.executorch.quantize import QuantizedTable, quantized_module
    from edgebert.weight_grids import torchao_symmetric_int4

    grid = GRIDS["executorch-int4"]
    linear = nn.Sequential(nn.Linear(k, 24))
    w = linear[0].weight.detach().clone()
    stored = quantized_module(linear, BERT, "int4", ())[0].weight
    on_grid = grid.snap(linear[0])
    if k % 32:
        assert torch.equal(on_grid, w) and int(stored.qdata.abs().max()) > 8  # int8 levels, not 4-bit ones
    else:
        assert torch.equal(stored.dequantize(), on_grid) and not torch.equal(on_grid, w)
        assert torch.allclose(grid.snap(linear[0], on_grid), on_grid, rtol=1e-6, atol=0)  # its own points, to an ulp
    table = nn.Embedding(20, k + k % 2)  # rows of an even width (two values a byte); 508: one group a row
    looked_up = QuantizedTable(table, 4)(torch.arange(20)[None])[0]
    assert torch.equal(looked_up, torchao_symmetric_int4(table.weight.detach())) and torch.equal(looked_up, grid.snap(table))


@pytest.mark.parametrize("k", [64, 507])  # 507: a last block of 27 inputs
def test_the_two_level_grid_codes_are_4bit_values_times_4bit_multipliers_and_its_own_points(k: int) -> None:
    """onnx-w4a8: codes = values (-7..7) x their block's multiplier (1..9), at most 63 (the int8 recipe's 7-bit range),
    one scale a row; the rule maps its own points to themselves and rounds other weights to no more than 4 bits."""
    from edgebert.weight_grids import two_level_int4, two_level_int4_codes

    w = torch.randn(24, k, generator=torch.Generator().manual_seed(k)) * 0.05
    w[5] = 0  # an all-zero row: codes 0
    w[7, :32] *= 1e-3  # a block far below its row's largest: multiplier 1
    codes, multipliers, scale = two_level_int4_codes(w, 32)
    assert int(codes.abs().max()) == 63 and 1 <= int(multipliers.min()) and int(multipliers.max()) <= 9
    blocks = torch.nn.functional.pad(codes, (0, (-k) % 32)).reshape(24, -1, 32)
    assert bool((blocks % multipliers[..., None] == 0).all()) and int((blocks // multipliers[..., None]).abs().max()) <= 7
    assert not codes[5].any() and int(multipliers[7, 0]) == 1
    on_grid = two_level_int4(w, 32)
    assert torch.allclose(two_level_int4(on_grid, 32), on_grid, rtol=1e-6, atol=0) and not torch.equal(on_grid, w)
    assert torch.equal(two_level_int4_codes(on_grid, 32)[0], codes)
    coarse = (on_grid - w).norm() / w.norm()
    assert coarse > (onnxruntime_symmetric_int4(w, 32) - w).norm() / w.norm()  # coarser than free block scales, for int8 kernels


def test_a_student_trained_on_the_two_level_grid_exports_to_onnx_w4a8_exactly(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    """The w4a8 file stores 4-bit values and multipliers (INT4 / UINT4), onnxruntime folds them at load into the int8
    weights its integer kernels read, and those are the grid's codes; smaller than int8, and it holds."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    from edgebert.distill import distill
    from edgebert.export import export
    from edgebert.modelio import load_model
    from edgebert.weight_grids import two_level_int4_codes

    student, sts = tmp_path / "student", tmp_path / "sts.csv"
    sts.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\nthe man,the woman,2\n")
    distill(tiny_bert, tiny_corpus, student, weight_grid="onnx-w4a8", steps=4, batch_size=4, seq_len=24, student_layers=1,
            alpha_mlm=0, alpha_ce=0, mlm_probability=0, alpha_cos=1, eval_sts=sts, eval_steps=2, save_steps=2, quiet=True)  # fmt: skip
    assert off_grid(load_model(student).embedder, GRIDS["onnx-w4a8"]) == ["encoder.pooler.dense"]  # the unused fresh pooler
    reports = {q: export("onnx", student, tmp_path / q, quantize=q, quiet=True) for q in ("int8", "w4a8")}
    report = reports["w4a8"]
    assert report.manifest["parity"]["passed"] and report.manifest["target_details"]["opset"] == 21
    assert set(report.manifest["parity"]["kernel_paths"]) == {"host", "u8s8-saturating"}  # the folded codes, emulated
    path = tmp_path / "w4a8" / "model.onnx"
    stored = {(i.data_type, len(i.dims)) for i in onnx.load(str(path)).graph.initializer}
    assert {(onnx.TensorProto.INT4, 3), (onnx.TensorProto.UINT4, 3)} <= stored and (onnx.TensorProto.INT8, 2) not in stored  # zero points stay

    for init in onnx.load(str(path)).graph.initializer:  # two values a byte
        if init.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):
            assert len(init.raw_data) == (int(np.prod(init.dims)) + 1) // 2
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(tmp_path / "folded.onnx")
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    folded = onnx.load(str(tmp_path / "folded.onnx")).graph
    assert not [n for n in folded.node if "_unpack_" in n.name]  # folded at load: the kernels read int8 constants
    table = load_model(student).embedder.encoder.embeddings.word_embeddings.weight
    int8 = {i.name: numpy_helper.to_array(i) for i in folded.initializer if i.data_type == onnx.TensorProto.INT8}
    word = next(v for name, v in int8.items() if "word_embeddings" in name)
    assert np.array_equal(word, two_level_int4_codes(table, 32)[0].numpy())


@pytest.mark.parametrize("k", [64, 507])
def test_the_executorch_w4a8_grid_is_what_its_recipe_stores_per_channel(k: int) -> None:
    """ExecuTorch w4a8: a Linear 4-bit with one scale per output channel, on the grid, whose points map to themselves;
    one whose input width 32 does not divide (XNNPACK's group, here the row) int8 and off the grid."""
    from torch import nn

    from edgebert.families import BERT
    from edgebert.targets.executorch.quantize import quantized_module

    grid = GRIDS["executorch-w4a8"]
    linear = nn.Sequential(nn.Linear(k, 24))
    stored = quantized_module(linear, BERT, "w4a8", ())[0].weight
    on_grid = grid.snap(linear[0])
    if k % 32:
        assert torch.equal(on_grid, linear[0].weight.detach()) and int(stored.qdata.abs().max()) > 8
        return
    assert int(stored.qdata.abs().max()) <= 8 and stored.scale.numel() == 24
    assert torch.equal(stored.dequantize(), on_grid) and not torch.equal(on_grid, linear[0].weight.detach())
    assert torch.allclose(grid.snap(linear[0], on_grid), on_grid, rtol=1e-6, atol=0)


def _int4_weights(path: Path) -> list[np.ndarray]:
    """The first subgraph's 4-bit tensors of a .tflite file, dequantized (two values a byte, the low nibble first)."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    tree = flatbuffer_utils.read_model(str(path))
    found = []
    for tensor in tree.subgraphs[0].tensors:
        if tensor.type == schema.TensorType.INT4:
            packed = np.frombuffer(bytes(tree.buffers[tensor.buffer].data), np.uint8)
            q = np.stack([packed & 0x0F, packed >> 4], -1).reshape(-1)[: int(np.prod(tensor.shape))].astype(np.int8)
            q = np.where(q > 7, q - 16, q).reshape(tuple(tensor.shape))
            found.append(q.astype(np.float32) * np.asarray(tensor.quantization.scale, np.float32).reshape(-1, 1))
    return found


def test_a_student_trained_on_the_tflite_grid_exports_to_tflite_w4a8_exactly(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    """litert-torch stores W diag(gamma) for the Linears that read a LayerNorm (BERT: each layer's query / key / value
    and FFN up-projection): the grid rounds that product, so every 4-bit weight in the file is the grid's."""
    from edgebert.distill import distill
    from edgebert.export import export
    from edgebert.modelio import load_model
    from edgebert.weight_grids import grid_rules, litert_torch_folds

    student, sts = tmp_path / "student", tmp_path / "sts.csv"
    sts.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\nthe man,the woman,2\n")
    distill(tiny_bert, tiny_corpus, student, weight_grid="tflite-w4a8", steps=4, batch_size=4, seq_len=24, student_layers=2,
            alpha_mlm=0, alpha_ce=0, mlm_probability=0, alpha_cos=1, eval_sts=sts, eval_steps=2, save_steps=2, quiet=True)  # fmt: skip
    encoder = load_model(student).embedder.encoder
    names = {m: name for name, m in encoder.named_modules()}
    folds = {names[linear]: norm for linear, norm in litert_torch_folds(encoder).items()}
    folded = sorted(folds)
    assert folded == [f"encoder.layer.{i}.{m}" for i in (0, 1) for m in ("attention.self.key", "attention.self.query", "attention.self.value", "intermediate.dense")]
    assert off_grid(encoder, GRIDS["tflite-w4a8"]) == ["pooler.dense"]  # the loader's fresh pooler (unused)
    report = export("tflite", student, tmp_path / "w4a8", quantize="w4a8", quiet=True)
    assert report.manifest["target_details"]["quantization"]["float_islands"] == [] and report.manifest["parity"]["passed"]
    rules = grid_rules(encoder, GRIDS["tflite-w4a8"])
    expected = []  # what the file must hold: the grid's weights, times gamma where the converter folds it
    for name, (module, _) in rules.items():
        w = module.weight.detach()
        expected.append((w * folds[name].weight.detach() if name in folds else w).numpy())
    stored = _int4_weights(tmp_path / "w4a8" / "model.tflite")
    assert len(stored) >= 10  # 2 layers × 6 Linears (the pooler is not in the graph) and the word table
    for q in stored:
        assert any(e.shape == q.shape and np.allclose(q, e, rtol=1e-5, atol=1e-7) for e in expected)
