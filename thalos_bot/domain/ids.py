"""Identifiers. Plain strings at runtime, distinct types for the checker."""

from __future__ import annotations

import secrets
from typing import NewType

SessionId = NewType("SessionId", str)
AgentId = NewType("AgentId", str)
ConversationId = NewType("ConversationId", str)
ChannelId = NewType("ChannelId", str)


def new_session_id() -> SessionId:
    """A fresh, unguessable session id (``s_`` + 20 url-safe characters)."""
    return SessionId("s_" + secrets.token_urlsafe(15))
