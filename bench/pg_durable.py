"""The benches' PostgreSQL made durable, as in production.

The test server (:func:`tests.storage.postgres.start_server`) starts with ``fsync``,
``synchronous_commit`` and ``full_page_writes`` off on its command line, and a setting
given there wins over ``ALTER SYSTEM`` (``SHOW fsync`` still says ``off`` after it and
a reload). So the server is restarted with them on in its command line instead.
"""

from __future__ import annotations

import psycopg

from tests.storage.postgres import PostgresServer

DURABLE = ("fsync", "synchronous_commit", "full_page_writes")


def make_durable(server: PostgresServer) -> None:
    """Restart ``server`` with every setting of :data:`DURABLE` on; raises if one is
    still off afterwards."""
    options = server.root / "data" / "postmaster.opts"  # what pg_ctl restart starts with
    text = options.read_text(encoding="utf-8")
    for name in DURABLE:
        text = text.replace(f"{name}=off", f"{name}=on")
    options.write_text(text, encoding="utf-8")
    server.restart()
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        for name in DURABLE:
            row = conn.execute(f"SHOW {name}").fetchone()
            if row is None or row[0] != "on":
                raise RuntimeError(f"the bench's PostgreSQL still runs with {name} off")
