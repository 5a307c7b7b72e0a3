"""edgebert: distil, compress, export and benchmark BERT-family models for on-device use.

The Python API mirrors the CLI verbs; heavy dependencies load only when a verb runs.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["export", "__version__"]


def export(*args, **kwargs):  # noqa: D103 - thin lazy re-export
    from edgebert.export import export as _export

    return _export(*args, **kwargs)


export.__doc__ = "Export a model directory to a verified on-device target. See `edgebert.export.export`."
