"""Every key of ``bot.toml``, as the models define it: the index at the end of
docs/configuration.md is made from here (``python -m thalos_bot.cli.config_reference``), and
a test keeps the two the same, so the reference never names a key the models lack nor
leaves one out."""

from __future__ import annotations

import json
import sys
import types
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from thalos_bot.config.models import Settings

BEGIN = "<!-- every key: made by `python -m thalos_bot.cli.config_reference`; do not edit -->"
END = "<!-- end of every key -->"


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for argument in typing.get_args(annotation):
        yield from _models(argument)


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _is_list(typing.get_args(annotation)[0])
    return False


def _type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " or ".join(json.dumps(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type(typing.get_args(annotation)[0])
    if origin is not None:
        inner = ", ".join(_type(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    text = getattr(annotation, "__name__", None) or str(annotation)
    return "none" if text == "NoneType" else text


def _default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "(computed)"
    elif field.default is PydanticUndefined:
        return "(required)"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(table)"
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


def rows(model: type[BaseModel], prefix: str, seen: frozenset[type] = frozenset()) -> list[str]:
    """``| key | type | default |`` for every key of ``model`` under ``prefix``."""
    found: list[str] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        subs = [m for m in _models(field.annotation) if m not in seen]
        if subs:
            sub = subs[0]
            shown = f"[[{key}]]" if _is_list(field.annotation) else f"[{key}]"
            found.append(f"| `{shown}` | table | {_default(field)} |")
            found += rows(sub, f"{key}.", seen | {model})
            continue
        found.append(f"| `{key}` | {_type(field.annotation)} | `{_default(field)}` |")
    return found


def index() -> str:
    """The generated block: the core's keys, then each installed transport's."""
    from thalos_bot.channels.registry import discover

    lines = [BEGIN, "", "| key | type | default |", "|---|---|---|", *rows(Settings, "")]
    for name, plugin in sorted(discover().items()):
        lines.append(f"| `[channels.{name}]` | table | (table) |")
        lines += rows(plugin.config_model, f"channels.{name}.")
    return "\n".join([*lines, "", END])


if __name__ == "__main__":
    sys.stdout.write(index() + "\n")
