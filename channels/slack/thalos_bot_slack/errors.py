"""Slack's answers, sorted into what the channel does about them.

One place maps the SDK's exceptions: a refusal (``ok: false`` with Slack's code) is
final for that call; a 429 is waited out (see :mod:`thalos_bot_slack.limits`); a call
whose answer never came (a timeout, a dropped connection, a 5xx) may or may not have
taken effect, so a post is checked before it is sent again. Users never see the codes.
"""

from __future__ import annotations

UNAUTHORIZED = frozenset(
    {"not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired"}
)
GONE = frozenset({"channel_not_found", "not_in_channel", "is_archived", "user_disabled"})


class SlackCallError(Exception):
    """A Web API call Slack refused, with its code (e.g. ``channel_not_found``)."""

    def __init__(self, method: str, code: str) -> None:
        super().__init__(f"{method}: {code}")
        self.method = method
        self.code = code

    @property
    def unauthorized(self) -> bool:
        return self.code in UNAUTHORIZED

    @property
    def gone(self) -> bool:
        """The conversation cannot be written to (deleted, archived, bot removed)."""
        return self.code in GONE


class SlackInDoubtError(Exception):
    """No answer came: the call may have taken effect."""

    def __init__(self, method: str, cause: str) -> None:
        super().__init__(f"{method}: no answer ({cause})")
        self.method = method
        self.cause = cause
