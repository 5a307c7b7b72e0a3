"""A TF.js graph of a model with a free sequence axis ([1, T] for any T), to compare with edgebert's per-bucket
graphs (benchmarks/tfjs_free_axis.mjs in Node wasm, benchmarks/tfjs_webgl_shapes.mjs on WebGL). Not an export
target: edgebert exports static graphs, and this is the measurement behind that choice. It traces the
model exactly as `edgebert export --target tfjs` does (the same SavedModel builder, op forms, uint8 recipe and
converter), with the sequence length left unknown.

    python benchmarks/tfjs_free_axis.py MODEL_DIR OUT_DIR [--quantize uint8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--quantize", default="uint8")
    parser.parse_args()
    # The free-axis graph was built by the TensorFlow-class path (transformers 4's TFBertModel), which the TF.js export
    # no longer uses: it now captures the model with torch.export at static lengths (edgebert.targets.torch_graph).
    # Re-measuring needs a capture with a dynamic sequence dimension; the committed results (results/buckets-student)
    # were measured with the old path.
    sys.exit(
        "tfjs_free_axis.py: the TF-class graph builder it used is gone (transformers 5); a free-axis graph needs a "
        "dynamic-length capture in edgebert.targets.torch_graph, which does not exist yet"
    )


if __name__ == "__main__":
    main()
