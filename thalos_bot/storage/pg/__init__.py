"""The PostgreSQL store: the same ports as the SQLite one, on a shared server."""
