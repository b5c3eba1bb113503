"""``[storage]``: which database the daemon keeps its state in.

Without ``url`` (or with ``sqlite:///path``) it is the embedded SQLite file, today's
default. ``postgresql://user@host:port/database`` selects a PostgreSQL server; its
password never comes from the file, only from ``THALOS_DATABASE_PASSWORD`` or libpq's
own ``PGPASSWORD`` / ``~/.pgpass``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from thalos_bot.config.types import Seconds

POSTGRES_SCHEMES = ("postgresql", "postgres")
LOCAL_DATABASE = "local.sqlite3"
"""A replica's own SQLite file beside a PostgreSQL store (in the state directory)."""
"""The commands that work with a ``postgresql://`` url; the others read the SQLite file
and refuse one, for now."""
_SQLITE_PREFIX = "sqlite://"
_SHAPE = "must be postgresql://user@host:port/database or sqlite:///absolute/path/to/file.db"
_SECRET_IN = (
    "a password does not belong {where}; leave it out of the URL and set "  # noqa: S105
    "THALOS_DATABASE_PASSWORD (or PGPASSWORD, or use ~/.pgpass)"
)


@dataclass(frozen=True, slots=True)
class StorageTarget:
    kind: Literal["sqlite", "postgresql"]
    url: str | None
    """The PostgreSQL URL (no password in it); ``None`` for SQLite."""
    path: Path | None
    """The SQLite file ``url`` names; ``None`` for the default file or PostgreSQL."""


def parse_storage_url(value: str | None, *, where: str = "in the file") -> StorageTarget:
    """What ``[storage] url`` selects; ``ValueError`` with the fix when it is unusable
    (``where`` the URL was given, for the sentence on a password in it)."""
    if value is None:
        return StorageTarget("sqlite", None, None)
    if value.startswith(_SQLITE_PREFIX):
        rest = value.removeprefix(_SQLITE_PREFIX)
        if not rest.startswith("/") or rest == "/" or "?" in rest:
            raise ValueError(_SHAPE)
        return StorageTarget("sqlite", None, Path(rest))
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ValueError(_SHAPE) from None
    if parts.scheme not in POSTGRES_SCHEMES:
        raise ValueError(_SHAPE)
    if parts.password is not None or "password" in parse_qs(parts.query):
        raise ValueError(_SECRET_IN.format(where=where))
    return StorageTarget("postgresql", value, None)


class StorageSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(None, min_length=1, max_length=2000)
    pool_size: int = Field(10, ge=1, le=200)
    """PostgreSQL only: the most connections one daemon opens."""
    connection_lease: Seconds = Field(4.0, ge=1.0, le=300.0)
    """PostgreSQL only: how long a replica's hold on a platform connection (Discord's
    gateway, Slack's Socket Mode, Matrix's sync, Telegram's long poll) lasts unless
    renewed (every third of it). After a replica dies, another one opens the connection
    about this long later; a clean stop hands it over at once."""

    @field_validator("url")
    @classmethod
    def _usable(cls, value: str | None) -> str | None:
        parse_storage_url(value)
        return value

    @property
    def target(self) -> StorageTarget:
        return parse_storage_url(self.url)
