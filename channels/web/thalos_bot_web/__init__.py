"""The web channel: a chat page served by the daemon, streamed over Server-Sent Events."""
