"""Detached turns: the subagent runner and what runs through it (delegation)."""
