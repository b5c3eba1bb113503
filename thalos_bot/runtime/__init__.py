"""The agent runtime: sessions, turns, the tool-use loop, cancellation."""
