"""Delivery machinery every transport reuses: what a failed call means
(:mod:`.failure`), and — as it is lifted out of the Telegram plug-in — the per-chat view
of an answer and its final exactly once, the outbox and its journal."""
