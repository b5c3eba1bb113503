"""``[channels.console]``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from thalos_bot.config.types import Seconds


class ConsoleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: StrictBool = True
    principal_id: str = Field("local", min_length=1, max_length=128)
    """The security context id of whoever types at this terminal (owns memories)."""
    roles: list[str] = Field(default_factory=list)
    history: StrictBool = True
    """Keep input history in the state directory (interactive terminals only)."""
    flush_interval: Seconds = Field(0.05, gt=0, le=10)
    """How often streamed text is shown while an answer is written: a terminal has no
    rate limit, so far more often than the pump's ``flush_interval`` (kept for Telegram)."""
