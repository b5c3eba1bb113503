"""Pacing a transport's calls: per-chat gates that honour flood-control waits
(retry-after), a global rate cap, and backoff with jitter after failures."""
