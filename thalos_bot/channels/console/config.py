"""``[channels.console]``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ConsoleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    principal_id: str = Field("local", min_length=1, max_length=128)
    """The security context id of whoever types at this terminal (owns memories)."""
    roles: list[str] = Field(default_factory=list)
    history: bool = True
    """Keep input history in the state directory (interactive terminals only)."""
