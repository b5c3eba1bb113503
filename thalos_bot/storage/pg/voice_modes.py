"""Each conversation's ``/voice`` choice on PostgreSQL, shared by the replicas."""

from __future__ import annotations

from thalos_bot.storage.pg.dialect import PgDialect
from thalos_bot.storage.voice_modes import SqliteVoiceModes


class PgVoiceModes(PgDialect, SqliteVoiceModes):
    """The same statements, in PostgreSQL's dialect."""
