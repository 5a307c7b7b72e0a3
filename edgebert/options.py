"""A verb's config dataclass (edgebert/config.py) as keyword options of its API function and as argparse options.

Both read the dataclass's fields, so a default is written once: `edgebert distill --help`, `edgebert.distill(...)`
and a recipe's [distill] section agree by construction.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from edgebert.errors import UserError

F = TypeVar("F", bound=Callable[..., Any])
_TYPES = {"int": int, "float": float, "str": str}


def fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


def default(cls: type, name: str) -> Any:
    """The default of field `name` of the dataclass `cls` (a fresh copy for list/dict defaults)."""
    f = next(f for f in fields(cls) if f.name == name)
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def defaults(cls: type) -> dict[str, Any]:
    return {f.name: default(cls, f.name) for f in fields(cls)}


def checked(cls: type, options: dict[str, Any], verb: str) -> dict[str, Any]:
    """`options` (keyword arguments of `verb`) with every other field's default; UserError naming an unknown one."""
    names = [f.name for f in fields(cls)]
    for key in options:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(names)}"
            raise UserError(f"{verb}() got an unknown option {key!r}; {hint}")
    return {**defaults(cls), **options}


def keyword_options(cls: type) -> Callable[[F], F]:
    """Give a function `f(positional..., **options)` the signature `f(positional..., *, <cls's fields with defaults>)`,
    so `help()`, `inspect.signature` and editors show every option and its default (read from `cls`)."""

    def decorate(function: F) -> F:
        own = [p for p in inspect.signature(function).parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
        keywords = [
            inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default(cls, f.name), annotation=f.type)
            for f in fields(cls)
            if f.name not in {p.name for p in own}
        ]
        function.__signature__ = inspect.signature(function).replace(parameters=[*own, *keywords])  # type: ignore[attr-defined]
        return function

    return decorate


def add_options(parser: argparse.ArgumentParser, cls: type, groups: dict[str, Any] | None = None) -> dict[str, Any]:
    """Add every command-line field of `cls` as `--field-name`, its default the field's, into its --help group
    (created as needed, in field order; `groups` may hold groups made by the caller). Returns the groups."""
    groups = {} if groups is None else groups
    for f in fields(cls):
        meta = f.metadata
        if not meta or not meta.get("cli"):
            continue
        if meta["group"] not in groups:
            groups[meta["group"]] = parser.add_argument_group(meta["group"])
        kwargs = dict(meta["argparse"])
        flag = kwargs.pop("flag", "--" + f.name.replace("_", "-"))
        kwargs.update(_kind(f, kwargs))
        value = default(cls, f.name)
        shown = "" if value in (None, False, {}) or "default" in meta["help"] else f" (default: {_shown(value)})"
        groups[meta["group"]].add_argument(flag, dest=f.name, default=value, help=meta["help"] + shown, **kwargs)
    return groups


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value).replace("%", "%%")


def _kind(f: dataclasses.Field[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """type / action keywords from the field's annotation, unless the metadata names them."""
    action = kwargs.get("action")
    if action == "int_list":
        return {"action": _IntList, "type": _ints, "nargs": "+"}
    if action == "target_limits":
        return {"action": _TargetLimits}
    annotation = str(f.type).replace(" | None", "")
    if annotation == "bool":
        return {"action": "store_true"}
    if "type" in kwargs or "choices" in kwargs or annotation not in _TYPES:
        return {}
    return {"type": _TYPES[annotation]}


def from_args(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of `cls`'s command-line fields, by field name."""
    return {f.name: getattr(args, f.name) for f in fields(cls) if f.metadata.get("cli") and hasattr(args, f.name)}


def _ints(text: str) -> list[int]:
    """'128' or '64,128' -> [128] / [64, 128]."""
    try:
        return [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected integers, got '{text}'") from exc


class _IntList(argparse.Action):
    """`--seq-len 64,128 256` -> [64, 128, 256]: one flat list, first occurrences kept."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, list(dict.fromkeys(v for group in values for v in group)))


class _TargetLimits(argparse.Action):
    """`--sts-limit-for tfjs=200` (repeatable) -> {"tfjs": 200}."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        from edgebert.config import BENCH_TARGETS

        target, _, number = str(values).partition("=")
        if target not in BENCH_TARGETS or not number.strip().isdigit() or int(number) < 2:
            parser.error(f"{option_string} {values}: expected TARGET=N with TARGET one of {', '.join(BENCH_TARGETS)} and N >= 2")
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest) or {}), target: int(number)})

