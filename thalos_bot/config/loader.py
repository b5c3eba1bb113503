"""Read ``bot.toml`` and turn every problem into one line that names the file and the key."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import platformdirs
from pydantic import BaseModel, ValidationError

from thalos_bot.config.models import Settings
from thalos_bot.config.storage import LOCAL_DATABASE

M = TypeVar("M", bound=BaseModel)

CONFIG_ENV = "THALOS_BOT_CONFIG"
_NAMED = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")
STATE_ENV = "THALOS_BOT_STATE_DIR"
DEFAULT_CONFIG_NAME = "bot.toml"


class ConfigError(Exception):
    """A configuration problem. ``problems`` holds one line per problem, each naming the
    file and the key path, e.g. ``bot.toml: agents[1].name: at most 64 characters``."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    settings: Settings
    path: Path | None
    """The file the settings came from; None when running on built-in defaults."""
    state_dir: Path

    @property
    def label(self) -> str:
        return display_path(self.path) if self.path else "built-in defaults"

    @property
    def database_path(self) -> Path:
        """The SQLite file: ``[storage] url`` when it names one, else ``thalos.db`` in
        the state directory. A PostgreSQL url raises :class:`ConfigError`: the commands
        that read this file have no PostgreSQL path yet (``run`` and ``chat`` do)."""
        target = self.settings.storage.target
        if target.kind == "postgresql":
            raise ConfigError([postgres_not_supported(self.label)])
        return target.path or self.state_dir / "thalos.db"

    @property
    def local_path(self) -> Path:
        """The SQLite file of this machine's own state (the skills mirror, long work in
        progress): the database itself, or ``local.sqlite3`` in the state directory
        beside a PostgreSQL store."""
        if self.settings.storage.target.kind == "postgresql":
            return self.state_dir / LOCAL_DATABASE
        return self.database_path


def postgres_not_supported(label: str) -> str:
    """Why a command that reads the SQLite file refuses a ``postgresql://`` store."""
    return (
        f"{label}: storage.url: this command reads the SQLite state file and does not "
        "support PostgreSQL yet (docs/replicas.md lists those that do); "
        "leave storage.url out (or use sqlite:///path) to run it on a SQLite file"
    )


def find_config(explicit: Path | None) -> Path | None:
    """``--config`` wins, then ``$THALOS_BOT_CONFIG``, then ``./bot.toml`` if present."""
    if explicit is not None:
        return explicit
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    local = Path.cwd() / DEFAULT_CONFIG_NAME
    return local if local.is_file() else None


def load_settings(explicit: Path | None = None) -> LoadedConfig:
    path = find_config(explicit)
    if path is None:
        settings = Settings()
        return LoadedConfig(settings, None, _state_dir(settings, None))
    raw = read_toml(path)
    settings = validate(Settings, raw, display_path(path))
    return LoadedConfig(settings, path, _state_dir(settings, path))


def display_path(path: Path) -> str:
    """How errors name a config file: relative to the working directory when it is
    inside it (``bot.toml``), else the full path (``/etc/thalos-bot/bot.toml``)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot be read ({exc.strerror or 'I/O error'})"]) from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError([f"{display_path(path)}: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{display_path(path)}: not valid TOML: {exc}"]) from None


def validate(model: type[M], raw: Any, label: str, prefix: str = "") -> M:
    """Validate ``raw`` against ``model``; raise :class:`ConfigError` naming each key."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, model, label, prefix)) from None


def format_validation_error(
    exc: ValidationError, model: type[BaseModel], label: str, prefix: str = ""
) -> list[str]:
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        message = _message(error["type"], str(error["msg"]), error.get("ctx") or {})
        if error["type"] == "extra_forbidden":
            message = _unknown_key(model, loc, prefix)
        key = _key_path(loc, prefix)
        if not key and _NAMED.match(message):
            problems.append(f"{label}: {prefix}{'.' if prefix else ''}{message}")
        else:
            problems.append(f"{label}: {key or '(top level)'}: {message}")
    return problems


def _key_path(loc: Iterable[int | str], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def _message(kind: str, msg: str, ctx: dict[str, Any]) -> str:
    if kind == "string_too_long":
        return f"at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return "must not be empty" if ctx.get("min_length") == 1 else msg[0].lower() + msg[1:]
    if kind == "missing":
        return "required"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        if pattern.startswith("^[a-z][a-z0-9_-]"):
            return "must be a slug: lower-case letters, digits, '-' or '_', starting with a letter"
        if pattern.startswith("^https?://"):
            return "must be an http:// or https:// URL"
        return f"does not match {pattern}"
    if kind in {"value_error", "assertion_error"}:
        return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return msg[0].lower() + msg[1:] if msg else kind


SECRET_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "anthropic_api_key",
        "key",
        "token",
        "bot_token",
        "telegram_bot_token",
        "access_token",
        "password",
    }
)
"""Keys people write into ``bot.toml`` for the secrets that only come from the environment."""


def _unknown_key(model: type[BaseModel], loc: tuple[int | str, ...], prefix: str) -> str:
    """``unknown key``, with what the writer most likely meant."""
    name = loc[-1] if loc else ""
    if isinstance(name, str) and name.lower() in SECRET_KEYS:
        return (
            "unknown key: secrets never go in bot.toml; they come from the environment, "
            "ANTHROPIC_API_KEY / TELEGRAM_BOT_TOKEN / THALOS_MATRIX_ACCESS_TOKEN (under systemd: "
            "the EnvironmentFile)"
        )
    in_table = bool(prefix) or len(loc) > 1
    if in_table and isinstance(name, str) and name in Settings.model_fields:
        return (
            f"unknown key: {name!r} is a top-level key, and top-level keys go before the "
            "first [table] (TOML puts every key after a [table] line inside it)"
        )
    hint = _suggest(model, loc)
    return "unknown key" + (f" (did you mean {hint!r}?)" if hint else "")


def _suggest(model: type[BaseModel], loc: tuple[int | str, ...]) -> str | None:
    """Best-effort 'did you mean' for an unknown key, walking the model along ``loc``."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return None
        annotation = fields[part].annotation
        current = _inner_model(annotation)
        if current is None:
            return None
    fields = getattr(current, "model_fields", None)
    if not fields or not isinstance(loc[-1], str):
        return None
    match = difflib.get_close_matches(loc[-1], list(fields), n=1, cutoff=0.6)
    return match[0] if match else None


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _state_dir(settings: Settings, config_path: Path | None) -> Path:
    """Where the SQLite file lives.

    ``state_dir`` from the file (relative to the file's folder) wins; then
    ``$THALOS_BOT_STATE_DIR``; then systemd's ``$STATE_DIRECTORY``; then the
    user's XDG state directory (``~/.local/state/thalos-bot``).
    """
    if settings.state_dir is not None:
        base = config_path.parent if config_path else Path.cwd()
        return (base / settings.state_dir).resolve()
    for env in (STATE_ENV, "STATE_DIRECTORY"):
        value = os.environ.get(env)
        if value:
            return Path(value.split(":")[0]).resolve()
    return Path(platformdirs.user_state_dir("thalos-bot", appauthor=False))
