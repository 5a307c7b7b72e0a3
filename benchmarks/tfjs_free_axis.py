"""A TF.js graph of a model with a free sequence axis ([1, T] for any T), to compare with edgebert's per-bucket
graphs (benchmarks/tfjs_free_axis.mjs in Node wasm, benchmarks/tfjs_webgl_shapes.mjs on WebGL). Not an export
target: edgebert exports static graphs, and this is the measurement behind that choice (issue 17). It traces the
model exactly as `edgebert export --target tfjs` does (the same SavedModel builder, op forms, uint8 recipe and
converter), with the sequence length left unknown.

    python benchmarks/tfjs_free_axis.py MODEL_DIR OUT_DIR [--quantize uint8]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--quantize", default="uint8")
    args = parser.parse_args()
    import os

    from edgebert.targets.tf_subprocess import apply_env

    apply_env(os.environ, tensorflow=True)  # as edgebert's TF.js worker: tf_keras, no oneDNN LayerNorm fusion
    from edgebert.families import family_for
    from edgebert.modeldir import resolve_stack
    from edgebert.targets.tf_savedmodel import build_saved_model
    from edgebert.targets.tfjs.convert import convert_to_tfjs

    family = family_for(json.loads((args.model_dir / "config.json").read_text())["model_type"])
    pooling = "+".join(resolve_stack(args.model_dir, family.default_pooling).pooling)
    with tempfile.TemporaryDirectory(prefix="edgebert-free-axis-") as scratch:
        saved = Path(scratch) / "saved_model"
        info = build_saved_model(args.model_dir, {"serving_default": None}, pooling, family, saved,  # type: ignore[dict-item]
                                 gather_rows=True, dense_matmul=True)  # fmt: skip
        convert_to_tfjs(saved, args.out_dir, args.quantize, family.tfjs_ffn_output_patterns)
    graph = json.loads((args.out_dir / "model.json").read_text())
    ops = sorted({n["op"] for n in graph["modelTopology"]["node"]})
    print(json.dumps({"out_dir": str(args.out_dir), "nodes": len(graph["modelTopology"]["node"]), "ops": ops, **info}))


if __name__ == "__main__":
    main()
