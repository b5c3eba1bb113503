"""``[media]``: how long the photos and files people sent are kept."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict

from thalos_bot.config.types import DAY, HOUR, duration


class MediaSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    retention: Annotated[float | None, duration(HOUR, off=True)] = 30 * DAY
    """How long a stored image, PDF or text file is kept once no session that is still
    open references it (counted from when it was last sent, or when the last session
    that showed it ended); ``"off"`` keeps every one forever. The daemon prunes every
    hour; ``thalos-bot media prune`` does it at once."""
