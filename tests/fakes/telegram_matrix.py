"""The fault matrix for delivery: every network fault Telegram can meet a sendMessage with,
as a named way to arm the Telegram fake (shared by the test suite and bench/telegram.py).

Each fault hits the next sendMessage, except "connection refused", which is no request's
fate but the server's: the provider's script calls :func:`refuse_steps` where the message
is due, and the fake refuses every connection for a while.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tests.fakes.telegram_api import TelegramFake
from thalos_bot.providers.scripted import Await, Say, Step

MEANWHILE = "are you there?"
"""What the user writes while a send is in doubt, in the faults that say so."""


@dataclass(frozen=True)
class MatrixFault:
    name: str
    arm: Callable[[TelegramFake], None]
    """Queues the fault for the next sendMessage."""
    user_says: bool = False
    """The user writes while the send is in doubt (their message takes the next id)."""
    refuse: float = 0.0
    """Seconds connections are refused when the first message is due (instead of arm)."""


def _nothing(fake: TelegramFake) -> None:
    """No request is faulted: the provider's script refuses connections."""


def _server_error(code: int, *, applied: bool = False) -> MatrixFault:
    name = f"{code}, applied" if applied else str(code)
    return MatrixFault(name, lambda fake: fake.fail_next("sendMessage", code, applied=applied))


def faults(*, retry_after: int = 1, times_429: int = 3, refuse: float = 0.4) -> list[MatrixFault]:
    return [
        MatrixFault(
            f"429 x{times_429}",
            lambda f: f.fail_next("sendMessage", 429, retry_after=retry_after, times=times_429),
        ),
        _server_error(500),
        _server_error(502),
        _server_error(503),
        _server_error(504),
        _server_error(500, applied=True),
        _server_error(502, applied=True),
        MatrixFault("connection refused", _nothing, refuse=refuse),
        MatrixFault("dropped before read", lambda f: f.drop_next("sendMessage")),
        MatrixFault("applied, dropped", lambda f: f.timeout_next("sendMessage", close=True)),
        MatrixFault("applied, hung", lambda f: f.timeout_next("sendMessage")),
        MatrixFault("timed out, not applied", lambda f: f.stall_next("sendMessage")),
        MatrixFault(
            "applied, dropped, user writes",
            lambda f: f.timeout_next("sendMessage", close=True, user_says=MEANWHILE),
            user_says=True,
        ),
        MatrixFault(
            "dropped, user writes",
            lambda f: f.drop_next("sendMessage", user_says=MEANWHILE),
            user_says=True,
        ),
    ]


def answer_steps(
    fake: TelegramFake, mode: str, fault: MatrixFault, text: str, *, delay: float = 0.01
) -> list[Step]:
    """The provider's reply streaming ``text``; for "connection refused", connections are
    refused where the first message is due: at the start with ``streaming = "edit"``
    (the first live message), at the end otherwise (the final message)."""
    chunks = [text[i : i + 12] for i in range(0, len(text), 12)]
    steps: list[Step] = [Say(*chunks, delay=delay)]
    if fault.refuse:
        steps.insert(0 if mode == "edit" else 1, Await(_refusing(fake, fault.refuse)))
    return steps


def _refusing(fake: TelegramFake, seconds: float) -> Callable[[], Awaitable[None]]:
    async def refuse() -> None:
        fake.refuse_connections(seconds)

    return refuse


def showing(texts: list[str], answer: str) -> tuple[int, int]:
    """How many messages show ``answer`` whole, and how many only a part of it."""
    whole = sum(1 for text in texts if text == answer)
    parts = sum(1 for text in texts if text and text != answer and answer.startswith(text))
    return whole, parts
