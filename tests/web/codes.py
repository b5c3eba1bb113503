"""A login code written into a running daemon's SQLite file as ``thalos-bot web pair``
writes it (quicker than the command: no new process)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path

from thalos_bot.channels.admission.pairing import CODE_TTL
from thalos_bot.domain.codes import code_hash, new_code
from thalos_bot_web.pairing import CODE_LENGTH

DATABASE = "thalos.db"


def login_code(state: Path, principal: str, *, issued_at: float | None = None) -> str:
    """A code for ``principal``, issued ``issued_at`` (now) with the real life."""
    code = new_code(CODE_LENGTH)
    expires = (time.time() if issued_at is None else issued_at) + CODE_TTL
    with contextlib.closing(sqlite3.connect(state / DATABASE)) as conn, conn:
        conn.execute(
            "INSERT INTO web_pairing (digest, principal, expires_at) VALUES (?, ?, ?)",
            (code_hash(code), principal, expires),
        )
    return code


def signing_secret(state: Path) -> bytes:
    """The daemon's cookie secret, as it keeps it."""
    with contextlib.closing(sqlite3.connect(state / DATABASE)) as conn:
        (secret,) = conn.execute("SELECT secret FROM web_secret").fetchone()
    return bytes(secret)
