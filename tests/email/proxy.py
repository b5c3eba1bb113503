"""A TCP proxy between the bot and the real Dovecot, for the deaths Dovecot never dies
itself: every connection is carried byte for byte until an armed :class:`Fault` sees
its bytes go by, then that one connection

- ``freezes``: nothing more is carried either way and neither side is closed (a NAT or
  firewall that forgot it, a server host gone: no FIN, no RST, only silence); or
- is ``cut``: both sides are closed (a server restarted in the middle of a command).

A fault fires once. Bytes from the bot that set one off are not carried (the command
never reaches Dovecot); bytes from Dovecot are carried first. A connection made after
a fault is carried as usual, as a new path through a NAT would be.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self


@dataclass
class Fault:
    seen: bytes
    """The bytes, within one read, that set it off."""
    from_server: bool = False
    cut: bool = False
    fired: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Proxy:
    target_port: int
    port: int = 0
    connections: int = 0
    faults: list[Fault] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def arm(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, bot_r: asyncio.StreamReader, bot_w: asyncio.StreamWriter) -> None:
        self.connections += 1
        dovecot_r, dovecot_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        frozen = asyncio.Event()

        async def carry(r: asyncio.StreamReader, w: asyncio.StreamWriter, server: bool) -> None:
            while data := await r.read(65536):
                if frozen.is_set():
                    break
                fault = next(
                    (f for f in self.faults if f.from_server == server and f.seen in data), None
                )
                if fault is not None:
                    self.faults.remove(fault)
                    if server:
                        w.write(data)
                    fault.fired.set()
                    if fault.cut:
                        return
                    frozen.set()
                    break
                w.write(data)
                await w.drain()
            if frozen.is_set():
                await asyncio.Event().wait()  # silence, with both sides open

        tasks = [
            asyncio.ensure_future(carry(bot_r, dovecot_w, server=False)),
            asyncio.ensure_future(carry(dovecot_r, bot_w, server=True)),
        ]
        self._tasks.update(tasks)
        try:
            await until_one_ends(tasks, (bot_w, dovecot_w))
        finally:
            self._tasks.difference_update(tasks)


async def until_one_ends(
    tasks: list[asyncio.Task[None]], writers: tuple[asyncio.StreamWriter, ...]
) -> None:
    """Carry both ways until one direction ends; then the other is stopped and both
    sides are closed."""
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in writers:
            writer.close()
