"""Persistence: the SQLite database, its migrations, and the session stores."""
