"""Configuration: ``bot.toml`` validated by pydantic models, secrets from the environment."""

from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.config.models import Settings

__all__ = ["ConfigError", "Settings", "load_settings"]
