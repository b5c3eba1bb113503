"""The invariant checker of the replica fault tests: it reads the Telegram fake's log
(what each chat was shown) and the database (history, inbox, leases)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

import psycopg

from tests.fakes.telegram_api import TelegramFake
from thalos_bot_telegram.webhook import INTERRUPTED

ANSWER = "You said: "


def finals(fake: TelegramFake, chat: int) -> list[str]:
    return [t for t in fake.texts(chat) if t.startswith(ANSWER)]


def shown_once(fake: TelegramFake, chat: int, text: str) -> bool:
    return finals(fake, chat).count(ANSWER + text) == 1


def history(url: str, chat: int) -> list[tuple[str, str]]:
    """(role, text) of the chat's session, in order."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT m.role, m.content FROM session_messages m JOIN conversation_bindings b"
            " ON b.session_id = m.session_id WHERE b.conversation_id = %s ORDER BY m.seq",
            (str(chat),),
        ).fetchall()
    said = []
    for role, content in rows:
        data = json.loads(content) if isinstance(content, str) else content
        text = "".join(b.get("text", "") for b in data["content"] if isinstance(b, dict))
        said.append((str(role), text))
    return said


def untaken(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM webhook_inbox WHERE taken_at IS NULL").fetchone()
    return int(row[0]) if row else 0


def holder_pid(url: str, chat: int) -> int | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT holder FROM conversation_leases WHERE lane = %s AND expires_at > now()",
            (str(chat),),
        ).fetchone()
    if row is None or row[0] is None:
        return None
    return int(str(row[0]).split(":")[1])


COMMIT_WAIT_S = 15.0


def _places(said: Sequence[tuple[str, str]], kept: Sequence[str]) -> list[int]:
    """Where each of ``kept`` is among the user messages of ``said`` (-1: absent)."""
    users = [t for role, t in said if role == "user"]
    return [next((i for i, u in enumerate(users) if text in u), -1) for text in kept]


def kept_history(url: str, chat: int, kept: Sequence[str]) -> list[tuple[str, str]]:
    """The chat's history once it holds every one of ``kept``, or as it is after
    :data:`COMMIT_WAIT_S`: an answer streamed by edits shows its whole text in its last
    preview, just before the turn's commit that writes the history (and the final)
    lands, so "shown" may come a moment before "kept"."""
    deadline = time.monotonic() + COMMIT_WAIT_S
    while -1 in _places(said := history(url, chat), kept) and time.monotonic() < deadline:
        time.sleep(0.1)
    return said


def check(
    fake: TelegramFake,
    url: str,
    sent: Mapping[int, Sequence[str]],
    *,
    interrupted: Mapping[int, Sequence[str]] | None = None,
) -> None:
    """Every message sent was answered exactly once, except those a takeover reported
    interrupted (never answered, the notice shown once per takeover); the history holds
    the answered ones in the order they were sent; the inbox kept nothing back."""
    cut = interrupted or {}
    for chat, texts in sent.items():
        shown = finals(fake, chat)
        assert len(shown) == len(set(shown)), f"chat {chat}: a final shown twice: {shown}"
        lost = cut.get(chat, ())
        for text in texts:
            if text in lost:
                assert ANSWER + text not in shown, f"chat {chat}: the interrupted turn ran on"
            else:
                assert ANSWER + text in shown, f"chat {chat}: {text!r} never answered"
        assert fake.texts(chat).count(INTERRUPTED) == (1 if lost else 0)
        kept = [t for t in texts if t not in lost]
        said = kept_history(url, chat, kept)
        places = _places(said, kept)
        assert -1 not in places, f"chat {chat}: an answered message is not in the history"
        assert places == sorted(places), f"chat {chat}: history out of order: {said}"
        assistants = [t for role, t in said if role == "assistant"]
        assert len(assistants) == len(set(assistants)), f"chat {chat}: a turn kept twice"
        for text in lost:
            assert ANSWER + text not in assistants, f"chat {chat}: a fenced turn was kept"
    assert untaken(url) == 0, "an update was left in the inbox"
