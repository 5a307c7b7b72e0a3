"""edgebert: distil, compress, export and benchmark BERT-family models for on-device use.

The Python API mirrors the CLI verbs: `edgebert.distill`, `edgebert.compress`, `edgebert.finetune`, `edgebert.export`,
`edgebert.bench` and `edgebert.pipeline` take the commands' options as keyword arguments. Heavy dependencies load only
when a verb runs, so `import edgebert` imports neither torch nor transformers.
"""

from __future__ import annotations

import importlib
import logging
import sys
import types

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: `import edgebert` stays a few ms
if TYPE_CHECKING:
    import inspect
    from collections.abc import Callable
    from typing import Any

__version__ = "0.1.0"

# Import-time warnings of libraries that transformers pulls in and edgebert never uses, which would otherwise print
# before every one-line error: torchao's "Failed to load .../_C_*.so" (kernels built for another torch) and torch's
# pytree notice about torchao's Enum registrations. Scoped to those two loggers; everything else is untouched.
QUIET_LOGGERS = ("torchao", "torch.utils._pytree")
for _name in QUIET_LOGGERS:
    logging.getLogger(_name).setLevel(logging.ERROR)

# verb -> "module:function" that runs it (imported on the first call).
VERB_FUNCTIONS = {
    "distill": "edgebert.distill.api:distill",
    "compress": "edgebert.compress.compress:compress",
    "finetune": "edgebert.finetune.api:finetune",
    "export": "edgebert.export:export",
    "bench": "edgebert.api:bench",
    "pipeline": "edgebert.api:pipeline",
}

__all__ = ["__version__", "bench", "compress", "distill", "export", "finetune", "pipeline"]  # VERB_FUNCTIONS' keys


# `edgebert.<verb>` is a Verb: calling it runs the verb (its function imported on the first call); any attribute is
# the submodule's of the same name (`edgebert.bench.harness`, `edgebert.distill.distill`), so one name serves both.
# Why not a plain function: `edgebert.distill`, `.compress`, `.finetune`, `.bench`, `.pipeline` are packages and `.export` is a
# module, and Python reaches a submodule through its parent's attribute (`import edgebert.bench.harness as h`,
# `edgebert.distill.distill = ...`, monkeypatch targets): a function there would break those paths.
class Verb:
    def __init__(self, name: str, target: str) -> None:
        object.__setattr__(self, "_verb", name)
        object.__setattr__(self, "_target", target)

    def function(self) -> Callable[..., Any]:
        """The function that runs the verb."""
        module, _, attr = self._target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def module(self) -> types.ModuleType:
        """The submodule `edgebert.<verb>`."""
        return importlib.import_module(f"{__name__}.{self._verb}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:  # inspect.signature(edgebert.bench): the verb's arguments
        import inspect

        return inspect.signature(self.function())

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]  # help(edgebert.bench): the verb's docstring
        return self.function().__doc__

    def __repr__(self) -> str:
        return f"<edgebert verb {self._verb!r}: {self._target.replace(':', '.')}(...)>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in ("__name__", "__path__", "__file__", "__all__"):
            raise AttributeError(name)  # dunder probes (copy, pickle, inspect) must not import the verb's module
        return getattr(self.module(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.module(), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.module(), name)

    def __dir__(self) -> list[str]:
        return dir(self.module())


_VERBS: dict[str, Any] = {name: Verb(name, target) for name, target in VERB_FUNCTIONS.items()}


def _verb_attribute(name: str) -> property:
    """The package attribute `name`: its Verb, unless reassigned. The import system assigns every imported submodule
    to its parent's attribute; that assignment of `edgebert.<name>` is ignored, so the verb stays in place."""

    def get(_module: types.ModuleType) -> Any:
        return _VERBS[name]

    def set_(_module: types.ModuleType, value: Any) -> None:
        if value is not sys.modules.get(f"{__name__}.{name}"):
            _VERBS[name] = value  # e.g. monkeypatch.setattr(edgebert, "export", fake)

    def delete(_module: types.ModuleType) -> None:
        _VERBS[name] = Verb(name, VERB_FUNCTIONS[name])

    return property(get, set_, delete, f"`edgebert {name}` as a function; see `Verb`.")


class _Package(types.ModuleType):
    """The `edgebert` module, whose verb attributes are properties (see `_verb_attribute`)."""

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *VERB_FUNCTIONS})


for _verb in VERB_FUNCTIONS:
    setattr(_Package, _verb, _verb_attribute(_verb))
sys.modules[__name__].__class__ = _Package
