"""Assembling and running the daemon."""
