"""A gateway in front of the real Postfix submission port, for the faults a test needs:
the bot's SMTP connection goes through it, byte for byte, unless a fault is armed.

- ``refuse``: the next connection is answered ``421 4.3.2`` (the service not available,
  closing: SMTP's "try again later") and closed; Postfix never sees it.
- ``lose``: the next mail is carried out by Postfix (its DATA accepted, ``250``), but
  that answer never reaches the bot: the connection is cut instead (a send in doubt).

It runs in its own thread with its own event loop, so a daemon started as a process
(the kill cases) reaches it as well as one in the test's loop.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from tests.email.proxy import until_one_ends

REFUSAL = b"421 4.3.2 Service not available, closing transmission channel\r\n"


@dataclass
class Gateway:
    target_port: int
    port: int = 0
    refuse: int = 0
    lose: int = 0
    refused: int = 0
    lost: int = 0
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    _server: asyncio.base_events.Server | None = None
    _thread: threading.Thread | None = None

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True, name="smtp-gateway")
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:  # connections still open: each closes its sockets
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        asyncio.run_coroutine_threadsafe(close(), self._loop)
        if self._thread is not None:
            self._thread.join(10)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self.refuse:
            self.refuse -= 1
            self.refused += 1
            client_w.write(REFUSAL)
            await client_w.drain()
            client_w.close()
            return
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        in_data = asyncio.Event()  # the client has sent the mail's last line

        async def upstream() -> None:
            data_mode = False
            while line := await client_r.readline():
                server_w.write(line)
                await server_w.drain()
                if not data_mode and line.strip().upper() == b"DATA":
                    data_mode = True
                elif data_mode and line == b".\r\n":
                    data_mode = False
                    in_data.set()
            server_w.close()

        async def downstream() -> None:
            while line := await server_r.readline():
                if in_data.is_set() and line.startswith(b"250") and self.lose:
                    self.lose -= 1
                    self.lost += 1
                    return
                if line.startswith(b"250"):
                    in_data.clear()
                client_w.write(line)
                await client_w.drain()

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        await until_one_ends(tasks, (client_w, server_w))
