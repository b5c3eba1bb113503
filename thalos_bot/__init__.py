"""thalos-bot: a channels-first chat bot daemon for Claude agents."""

__version__ = "0.1.0"
