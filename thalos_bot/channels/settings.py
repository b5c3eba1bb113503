"""What every transport's ``[channels.<name>]`` section has: on or off, whom an accepted
sender acts as, how long answers get at shutdown, and how much of a text file is read.
A transport's own settings model adds its platform's keys to this one."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from thalos_bot.config.types import Seconds


class ChannelSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    principal_id: str = Field("owner", min_length=1, max_length=128)
    """Whom the first allowed user runs as when ``[[people]]`` does not list them (an
    existing deployment's owner keeps its memories); any other sender no person lists
    is a person of their own."""
    roles: list[str] = Field(default_factory=list)
    """Roles that ``principal_id`` holds (what tools and agents it may use)."""
    drain_timeout: Seconds = 5.0
    """At shutdown, how long pending answers get to reach the platform."""
    text_file_max_chars: int = Field(50_000, ge=1_000, le=500_000)
    """A text file longer than this is cut (with a marker saying so)."""

    def principal_note(self) -> str:
        """For a transport's summary in ``check``: whom its first allowed user runs as."""
        roles = ", ".join(self.roles) or "none"
        return f"the first as principal {self.principal_id!r} (roles: {roles})"

    def allowed_ids(self) -> list[str]:
        """The allowed users' platform ids as text, the first being the owner's (a
        transport with an allowlist says how it reads its own key)."""
        return []
