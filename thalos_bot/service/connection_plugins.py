"""What a channel plug-in says about replicas: does it hold a platform connection only
one replica may open, does it offer a side that sends without it, what does it need on
a shared store. Read by the host (:mod:`thalos_bot.service.host`) before it opens it."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from pydantic import BaseModel

from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.channels.registry import ChannelHost, ChannelPair, ChannelPlugin


def _always(config: BaseModel) -> bool:
    return True


def _polling(config: BaseModel) -> bool:
    return getattr(config, "mode", "polling") != "webhook"


SHIPPED: dict[str, Callable[[BaseModel], bool]] = {
    "discord": _always,
    "slack": _always,
    "matrix": _always,
    "telegram": _polling,
}
"""The shipped transports that hold one platform connection, for manifests that do not
say (:attr:`thalos_bot.channels.manifest.Manifest.connection`). Telegram's webhook mode
holds none: every replica serves the webhook, and its conversation leases decide who
answers."""


def holds_connection(plugin: ChannelPlugin, config: BaseModel) -> bool:
    """Does ``plugin``, configured so, hold a platform connection only one replica may?"""
    said: Callable[[BaseModel], bool] | None = getattr(plugin, "connection", None)
    if said is None:
        said = SHIPPED.get(plugin.name)
    return said is not None and said(config)


def sending_side(
    plugin: ChannelPlugin,
) -> Callable[[BaseModel, ChannelHost], AbstractAsyncContextManager[ChannelPair]] | None:
    """The plug-in's send-only side, when its manifest offers one (``send_side``): then
    its turns run on any replica (:mod:`thalos_bot.service.anywhere`)."""
    if not getattr(plugin, "send_side", False):
        return None
    opener: Callable[[BaseModel, ChannelHost], AbstractAsyncContextManager[ChannelPair]] = (
        plugin.open_sending  # type: ignore[attr-defined]
    )
    return opener


def refused_on_replicas(plugin: ChannelPlugin, config: BaseModel) -> ChannelFatalError | None:
    """Why ``plugin``, configured so, cannot start on a shared store: a variable it
    needs there (its manifest's ``env_shared``) is not set. Said at every replica's
    start, not only when a standby takes the connection over."""
    needed: Callable[[BaseModel], tuple[str, ...]] | None = getattr(plugin, "env_shared", None)
    for variable in needed(config) if needed is not None else ():
        if not os.environ.get(variable, "").strip():
            return ChannelFatalError(
                f"{plugin.name}: set {variable} in the environment, the same on every "
                f"replica: with [storage] url on PostgreSQL this configuration needs it "
                f"(see docs/replicas.md)",
                2,  # a configuration error, as every one
            )
    return None
