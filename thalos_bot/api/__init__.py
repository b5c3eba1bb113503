"""The daemon's OpenAI-compatible API (docs/api.md), served on a transport's listener."""
