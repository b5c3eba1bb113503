"""``[skills]``: where SKILL.md procedures live and how much of them a turn sees.

Roots are folders, read in the order given; a relative root is resolved against the
folder of ``bot.toml`` (the working directory when running on built-in defaults).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationInfo, field_validator


class SkillsSettings(BaseModel):
    """``[skills]``: the skill library shared by every agent (each agent's ``skills``
    globs pick what it sees)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    roots: list[Path] = Field(default_factory=lambda: [Path("./skills")])
    """Folders scanned one level deep for ``<name>/SKILL.md`` and ``<name>.md``. On a
    duplicate name the earlier root wins."""
    allow_unknown_keys: StrictBool = False
    """Accept frontmatter keys this version does not know (they are ignored)."""
    catalogue_chars: int = Field(4000, ge=500, le=100_000)
    """The most characters the per-turn skills catalogue block may take; skills that do
    not fit are counted in an explicit overflow line."""
    search_max_top_k: int = Field(20, ge=1, le=100)
    """The most rows ``skills__search`` returns, whatever the model asks for."""
    search_top_k: int = Field(5, ge=1, le=100)
    """How many rows ``skills__search`` returns when the model does not say."""
    search_overfetch: int = Field(4, ge=1, le=100)
    """Search reads ``top_k x search_overfetch`` ranked rows per page before keeping the
    ones the agent may see, and reads further pages until it has ``top_k`` or none are
    left; a higher-scoring skill of another agent never shortens the list."""

    @field_validator("roots", mode="before")
    @classmethod
    def _no_blank_roots(cls, value: Any) -> Any:
        if isinstance(value, list):
            for root in value:
                if isinstance(root, str) and not root.strip():
                    raise ValueError("a root must be a non-empty path")
        return value

    @field_validator("search_top_k")
    @classmethod
    def _top_k_within_max(cls, value: int, info: ValidationInfo) -> int:
        most = info.data.get("search_max_top_k")
        if most is not None and value > most:
            raise ValueError(f"{value} is more than search_max_top_k ({most})")
        return value

    def scanned(self, base_dir: Path) -> SkillsSettings:
        """These settings with only the roots worth scanning: every configured root
        (an unreadable one is warned about), but the default ``./skills`` only when it
        exists, so a bot without a skills folder starts without a warning."""
        if "roots" in self.model_fields_set:
            return self
        kept = [root for root in self.roots if (base_dir / root).is_dir()]
        return self.model_copy(update={"roots": kept})

    def resolved_roots(self, base_dir: Path) -> list[Path]:
        """The roots as absolute paths; relative ones are taken from ``base_dir``."""
        return [root if root.is_absolute() else (base_dir / root).resolve() for root in self.roots]


def skills_base_dir(config_path: Path | None) -> Path:
    """The folder relative roots are taken from: that of ``bot.toml``, or the working
    directory when running on built-in defaults."""
    return config_path.parent if config_path is not None else Path.cwd()
