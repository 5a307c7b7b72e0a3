"""edgebert: distil, compress, export and benchmark BERT-family models for on-device use.

The Python API mirrors the CLI verbs; heavy dependencies load only when a verb runs.
"""

from __future__ import annotations

import sys
import types

__version__ = "0.1.0"

__all__ = ["export", "__version__"]


def _export(*args, **kwargs):  # noqa: D103 - thin lazy re-export
    from edgebert.export import export as _run

    return _run(*args, **kwargs)


_export.__name__ = _export.__qualname__ = "export"
_export.__doc__ = "Export a model directory to a verified on-device target. See `edgebert.export.export`."


class _Package(types.ModuleType):
    """`edgebert.export` stays the API function although a submodule has the same name: importing a submodule
    assigns it to the package attribute, which this property ignores (the module stays in sys.modules)."""

    @property
    def export(self):  # noqa: ANN201
        return _export

    @export.setter
    def export(self, value) -> None:  # noqa: ANN001
        pass


sys.modules[__name__].__class__ = _Package
