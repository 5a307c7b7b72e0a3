"""A refused export says what will pass: the target's other recipes, converted and verified on the same model, and
the one it names then exports and passes (one test per target)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edgebert.errors import VerificationError
from edgebert.export import export
from edgebert.weight_grids import GRIDS

# Tighter than any 8-bit recipe reaches on the tiny model, looser than its 16-bit ones (measured: uint8 / int8 0.99998,
# float16 / fp16 0.9999999 and above).
STRICT = 0.999999


@pytest.mark.parametrize(("target", "quantize"), [("onnx", "int8"), ("tflite", "int8"), ("tfjs", "uint8")])
def test_a_refusal_names_a_recipe_that_then_passes(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, quantize: str
) -> None:
    import edgebert.export as export_module

    tried, convert = [], export_module._convert_and_verify
    monkeypatch.setattr(export_module, "_convert_and_verify", lambda e, m, o, *a: tried.append(o.quantize) or convert(e, m, o, *a))
    with pytest.raises(VerificationError) as info:
        export(target, model=tiny_bert, out=tmp_path / "refused", quantize=quantize, seq_len=16, min_cosine=STRICT, quiet=True)
    assert tried[0] == quantize and not {"int4", "w4a8"} & set(tried)  # 4 bits are tried only on a model trained on the target's grid
    message = str(info.value)
    assert "\n" not in message and not (tmp_path / "refused").exists()
    named = re.search(r"recipes that hold for this model: (\S+) \(min cosine (\d\.\d+)\)", message)
    assert named, message
    for four_bit in ("int4", "w4a8"):  # 4 bits are not tried on a model off the grid: named as what holds once trained on it
        grid = f"{target}-{four_bit}"
        assert (f"{four_bit} once trained on the {grid} weight grid (distill --weight-grid {grid})" in message) == (grid in GRIDS)
    recipe, measured = named.group(1), float(named.group(2))
    assert recipe != quantize and measured >= STRICT
    report = export(target, model=tiny_bert, out=tmp_path / "passes", quantize=recipe, seq_len=16, min_cosine=STRICT, quiet=True)
    assert report.parity["passed"] and report.parity["min_cosine"] >= STRICT


def test_an_unquantized_refusal_tries_nothing_else(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(VerificationError) as info:
        export("onnx", model=tiny_bert, out=tmp_path / "x", seq_len=16, min_cosine=1.0, quiet=True)  # fp32 reaches 0.999999999, not 1
    assert "recipes that hold" not in str(info.value) and "no other recipe" not in str(info.value)
