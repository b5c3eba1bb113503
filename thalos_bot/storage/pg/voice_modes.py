"""Each conversation's ``/voice`` choice on PostgreSQL, shared by the replicas."""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.dialect import PgDialect
from thalos_bot.storage.voice_modes import VOICE_TABLE, SqliteVoiceModes

PG_VOICE_MIGRATIONS: list[Migration] = [Migration("0720_voice_modes", VOICE_TABLE)]


class PgVoiceModes(PgDialect, SqliteVoiceModes):
    """The same statements, in PostgreSQL's dialect."""
