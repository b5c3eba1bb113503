"""The console channel: a conversation in this terminal, or over piped stdin/stdout."""
