"""Long-term memory: owner-scoped records in SQLite, recalled with FTS5 and BM25."""
