"""A transport's running side, as its manifest's ``runtime`` names it.

The core hands ``open`` the validated section as a plain model; :class:`Runtime` checks
it is the transport's own once, here, so the plug-in's opener takes its config typed.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Generic, TypeVar

from pydantic import BaseModel

from thalos_bot.channels.registry import ChannelHost, ChannelPair

C = TypeVar("C", bound=BaseModel)

Opener = Callable[[C, ChannelHost], AbstractAsyncContextManager[ChannelPair]]


class Runtime(Generic[C]):
    def __init__(self, model: type[C], opener: Opener[C]) -> None:
        self.model = model
        self._opener = opener

    def open(
        self, config: BaseModel, host: ChannelHost
    ) -> AbstractAsyncContextManager[ChannelPair]:
        if not isinstance(config, self.model):
            raise TypeError(f"{type(config).__name__} is not {self.model.__name__}")
        return self._opener(config, host)
