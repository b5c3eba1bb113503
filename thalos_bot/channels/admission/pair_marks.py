"""The daemon's channel marks (:class:`~thalos_bot.channels.marks.ChatMarks`) for a
``pair`` command run while the daemon is stopped: pairing writes down there what it
read, so the daemon, once it runs, does not answer it. They are on the database the
``bot.toml`` names, whose schema is left to the daemon; None when that is a SQLite
file not made yet (the daemon never ran: it starts reading from where things are then).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from thalos_bot.channels.marks import ChatMarks
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database, DatabaseError


@asynccontextmanager
async def daemon_marks(path: Path) -> AsyncIterator[ChatMarks | None]:
    """The marks of the daemon ``path`` configures. A database that cannot be opened is
    a :class:`ConfigError` naming it (never with a password)."""
    loaded = load_settings(path)
    target = loaded.settings.storage.target
    try:
        if target.kind == "postgresql" and target.url is not None:
            from thalos_bot.storage.pg.chat_marks import PgChatMarks  # psycopg: only here
            from thalos_bot.storage.pg.database import PgDatabase

            async with await PgDatabase.open(target.url, apply=False, pool_size=1) as shared:
                yield PgChatMarks(shared)
        elif loaded.database_path.exists():
            async with await Database.open(loaded.database_path, apply=False) as database:
                yield SqliteChatMarks(database)
        else:
            yield None
    except DatabaseError as exc:
        raise ConfigError([f"the daemon's state cannot be opened: {exc}"]) from None
