"""The console source: lines typed at a prompt, or read from piped stdin.

Either way the console is strictly in order: after sending a line it waits until the
pump has fully dealt with it (the answer delivered) before reading the next. At an
interactive prompt, Ctrl-C while an answer is being written sends ``/cancel``; Ctrl-C at
an empty prompt, Ctrl-D, or ``/exit`` quits. Piped input ends at EOF or ``/exit``.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TextIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.ids import ChannelId

QUIT_WORDS = frozenset({"/exit", "/quit"})
PROMPT = "› "

MakeMessage = Callable[[str], InboundMessage]


class ConsoleSource:
    def __init__(
        self, receive: MemoryObjectReceiveStream[InboundMessage], channel_id: str = "console"
    ) -> None:
        self.channel_id = ChannelId(channel_id)
        self._receive = receive

    async def messages(self) -> AsyncIterator[InboundMessage]:
        async with self._receive:
            async for message in self._receive:
                yield message


def _is_quit(text: str) -> bool:
    return text.strip().lower() in QUIT_WORDS


async def read_piped(
    send: MemoryObjectSendStream[InboundMessage], stdin: TextIO, make: MakeMessage
) -> None:
    """Read lines until EOF; each waits for the previous one to be handled."""
    async with send:
        while True:
            line = await anyio.to_thread.run_sync(stdin.readline, abandon_on_cancel=True)
            if not line:
                return
            text = line.rstrip("\r\n")
            if _is_quit(text):
                return
            if not text.strip():
                continue
            message = make(text)
            await send.send(message)
            if message.handled is not None:
                await message.handled.wait()


async def read_interactive(
    send: MemoryObjectSendStream[InboundMessage],
    make: MakeMessage,
    history_file: Path | None,
) -> None:
    """A prompt_toolkit prompt with line editing and history."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    bindings = KeyBindings()

    @bindings.add("c-c")
    def _ctrl_c(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    history = FileHistory(str(history_file)) if history_file else InMemoryHistory()
    session: PromptSession[str] = PromptSession(history=history, key_bindings=bindings)
    async with send:
        while True:
            try:
                text = await session.prompt_async(PROMPT)
            except (KeyboardInterrupt, EOFError):
                return
            if _is_quit(text):
                return
            if not text.strip():
                continue
            message = make(text)
            await send.send(message)
            await _wait_for_answer(message, send, make)


async def _wait_for_answer(
    message: InboundMessage, send: MemoryObjectSendStream[InboundMessage], make: MakeMessage
) -> None:
    """Wait until ``message`` is handled; Ctrl-C meanwhile sends ``/cancel``."""
    if message.handled is None:
        return
    async with anyio.create_task_group() as group:

        async def cancel_on_interrupt() -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    await send.send(make("/cancel"))

        group.start_soon(cancel_on_interrupt)
        with _echo_off(sys.stdin):
            await message.handled.wait()
        group.cancel_scope.cancel()


@contextlib.contextmanager
def _echo_off(stream: TextIO) -> Iterator[None]:
    """Keep keys typed during an answer from garbling it: they stay buffered (unechoed)
    and show up at the next prompt."""
    try:
        import termios

        fd = stream.fileno()
        old = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        yield
        return
    new = list(old)
    new[3] = new[3] & ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSADRAIN, new)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)
