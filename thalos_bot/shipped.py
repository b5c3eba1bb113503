"""Files the distribution ships beside the code: the sample ``bot.toml``, the skills and
the systemd unit.

A wheel carries them as package data under ``thalos_bot/_shipped/`` (see
``[tool.hatch.build.targets.wheel.force-include]``); a checkout (an editable install)
has them at the repository root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

ShippedName = Literal["bot.toml", "skills", "thalos-bot.service", "deploy-README.md"]

_PACKAGE: Final = Path(__file__).resolve().parent
_IN_CHECKOUT: Final[dict[ShippedName, str]] = {
    "bot.toml": "bot.toml",
    "skills": "skills",
    "thalos-bot.service": "deploy/thalos-bot.service",
    "deploy-README.md": "deploy/README.md",
}


class ShippedFileMissingError(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"this installation of thalos-bot does not carry {name}")
        self.name = name


def shipped(name: ShippedName) -> Path:
    """Where the shipped ``name`` is; raises :class:`ShippedFileMissingError`."""
    for candidate in (_PACKAGE / "_shipped" / name, _PACKAGE.parent / _IN_CHECKOUT[name]):
        if candidate.exists():
            return candidate
    raise ShippedFileMissingError(name)
