"""Channels: where messages come from (sources) and where replies go (adapters)."""
