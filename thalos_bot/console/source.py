"""The console source: lines typed at a prompt, or read from piped stdin.

Piped input is strictly in order: after sending a line the source waits until the pump
has fully dealt with it (the answer delivered) before reading the next; it ends at EOF
or ``/exit``. At an interactive prompt the input line stays live while an answer is
written, and each line goes to the pump at once, exactly as on Telegram. Ctrl-C while an
answer is being written sends ``/cancel``; Ctrl-C at an empty prompt says "Ctrl-C again
to quit" and the next one quits; Ctrl-D or ``/exit`` quits at once. While a tool call
waits for approval, the prompt is the question and the next line answers it (a command
such as ``/cancel`` still goes to the pump). Piped input never answers a question:
there, asking is denied.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from thalos_bot.channels.ports import InboundMessage
from thalos_bot.console.questions import Questions
from thalos_bot.domain.ids import ChannelId

if TYPE_CHECKING:
    from thalos_bot.console.screen import Screen

QUIT_WORDS = frozenset({"/exit", "/quit"})
QUIT_HINT = "Ctrl-C again to quit (Ctrl-D quits at once).\n"

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
    screen: Screen,
    questions: Questions | None = None,
) -> None:
    """A prompt_toolkit prompt with line editing and history that stays live while an
    answer is written: what is typed shows at once, every line is sent at once (the pump
    runs /status, /help and /cancel straight away and tells any other line that it is
    still working), and Ctrl-C during an answer sends ``/cancel``."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    waiting: dict[int, tuple[InboundMessage, int]] = {}
    """Sent lines the pump has not finished with yet, by id(), with how many answers had
    finished when each was sent (one sent since the last answer may be about to start)."""
    armed = [False]
    """A Ctrl-C at the empty prompt has said "again to quit"; the next one quits."""
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _ctrl_c(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        elif screen.busy or any(done == screen.answers_done for _, done in waiting.values()):
            send.send_nowait(make("/cancel"))
        elif armed[0]:
            event.app.exit(exception=KeyboardInterrupt())
        else:
            # Two quick presses (one to stop an answer, one too many) must not quit.
            armed[0] = True
            event.app.create_background_task(screen.print_above(QUIT_HINT))

    history = FileHistory(str(history_file)) if history_file else InMemoryHistory()
    session: PromptSession[str] = PromptSession(history=history, key_bindings=bindings)
    async with send, anyio.create_task_group() as group:
        while True:
            try:
                text = await session.prompt_async(screen.message)
            except (KeyboardInterrupt, EOFError):
                break
            if questions is not None and not text.startswith("/") and questions.answer(text):
                continue  # it answered a question (an approval), it is not a message
            armed[0] = False
            if _is_quit(text):
                break
            if not text.strip():
                continue
            message = make(text)
            await send.send(message)
            if message.handled is not None:
                waiting[id(message)] = (message, screen.answers_done)
                group.start_soon(_forget_when_handled, message, waiting)
        group.cancel_scope.cancel()


async def _forget_when_handled(
    message: InboundMessage, waiting: dict[int, tuple[InboundMessage, int]]
) -> None:
    if message.handled is not None:
        await message.handled.wait()
    waiting.pop(id(message), None)
