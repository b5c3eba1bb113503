"""Markup built by construction: every text is escaped unless it already is :class:`Markup`.

The dashboard shows strings it did not write (a channel's last error, a schedule's task,
a tool's name, a skill's description). They reach a page only through :func:`tag` or
:func:`text`, which escape them, so no stored value can open an element or an attribute.
"""

from __future__ import annotations

import html
from collections.abc import Iterable


class Markup(str):
    """A string that is already safe HTML (or SVG): it is inserted as it is."""

    __slots__ = ()


def text(value: object) -> Markup:
    """``value`` as escaped text (quotes too, so it is safe in an attribute as well)."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def _children(items: Iterable[object]) -> str:
    parts: list[str] = []
    for item in items:
        if item is None or item is False:
            continue
        if isinstance(item, str | int | float):
            parts.append(text(item))
        elif isinstance(item, Iterable):
            parts.append(_children(item))
        else:
            parts.append(text(item))
    return "".join(parts)


def _attributes(attrs: dict[str, object]) -> str:
    parts: list[str] = []
    for raw_name, value in attrs.items():
        if value is None or value is False:
            continue
        name = raw_name.rstrip("_").replace("_", "-")
        if value is True:
            parts.append(f" {name}")
        else:
            parts.append(f' {name}="{text(value)}"')
    return "".join(parts)


VOID = frozenset({"br", "input", "link", "meta", "hr", "img"})


def tag(element: str, /, *children: object, **attrs: object) -> Markup:
    """``<element attrs>children</element>``. Attribute names: a trailing ``_`` is dropped
    (``class_``), other ``_`` become ``-`` (``aria_label``); True writes a bare attribute,
    None or False leaves it out."""
    opening = f"<{element}{_attributes(attrs)}>"
    if element in VOID:
        return Markup(opening)
    return Markup(f"{opening}{_children(children)}</{element}>")


def join(items: Iterable[object]) -> Markup:
    """Several children as one piece of markup."""
    return Markup(_children(items))
