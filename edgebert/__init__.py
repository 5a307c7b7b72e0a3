"""edgebert: distil, compress, export and benchmark BERT-family models for on-device use.

The Python API mirrors the CLI verbs; heavy dependencies load only when a verb runs.
"""

from __future__ import annotations

import logging
import sys
import types

__version__ = "0.1.0"

# Import-time warnings of libraries that transformers pulls in and edgebert never uses, which would otherwise print
# before every one-line error: torchao's "Failed to load .../_C_*.so" (kernels built for another torch) and torch's
# pytree notice about torchao's Enum registrations. Scoped to those two loggers; everything else is untouched.
QUIET_LOGGERS = ("torchao", "torch.utils._pytree")
for _name in QUIET_LOGGERS:
    logging.getLogger(_name).setLevel(logging.ERROR)

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
