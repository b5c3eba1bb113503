"""What ``service install`` carries over from the set-up the person already has.

A person who ran ``init``, paired a channel and chatted has a working ``bot.toml`` and
its secrets file beside it. The service gets that configuration (the console turned
off, the state folder made the service's) and those secrets (from the secrets file
beside it, else from this shell's environment), never the bare sample; and the report
says what was used and what is still missing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import tomlkit
from tomlkit.items import Table

from thalos_bot.channels.checks import DoctorChecks
from thalos_bot.channels.registry import discover, validate_channels
from thalos_bot.config.loader import LoadedConfig, display_path, validate
from thalos_bot.config.models import Settings
from thalos_bot.providers.factory import API_KEY_ENV
from thalos_bot.service.provider_checks import provider_env, uses_default

SECRETS_HEADER = """\
# Secrets for thalos-bot, read by systemd (EnvironmentFile=) before it drops privileges.
# Keep this file 0600. Values that bot.toml references as "${NAME}" go here too.
"""


@dataclass(slots=True)
class Carried:
    config: str
    """The service's ``bot.toml``."""
    secrets: str
    """The service's secrets file."""
    notes: list[str] = field(default_factory=list)
    """What was used, said in the install's report."""
    missing: list[str] = field(default_factory=list)
    """Variables the configuration needs that were found nowhere."""


def needed_env(loaded: LoadedConfig) -> list[str]:
    """Every variable ``run`` needs for this configuration: the model providers' keys
    and the enabled channels' tokens."""
    needed: list[str] = []
    if loaded.settings.provider.kind == "anthropic" and uses_default(loaded):
        needed.append(API_KEY_ENV)
    needed.extend(variable for variable, _ in provider_env(loaded))
    plugins = discover()
    configs = validate_channels(loaded.settings, loaded.label, plugins)
    for name in loaded.settings.enabled_channels():
        plugin: object = plugins.get(name)
        if isinstance(plugin, DoctorChecks) and name in configs:
            shared = loaded.settings.storage.target.kind == "postgresql"
            needed.extend(plugin.required_env(configs[name], shared=shared))
    return list(dict.fromkeys(needed))


def read_secrets(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a secrets file (comments and blank lines skipped)."""
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name and not name.startswith("#"):
            found[name.strip()] = value.strip()
    return found


def service_toml(text: str, state_dir: str | None) -> str:
    """``text`` (a ``bot.toml``, comments kept) made fit for a service: the console off
    (a service has no terminal) and ``state_dir`` the service's folder (None: removed,
    for a user service whose default folder is its own)."""
    document = tomlkit.parse(text)
    if state_dir is None:
        document.pop("state_dir", None)
    else:
        document["state_dir"] = state_dir
    channels = document.get("channels")
    if not isinstance(channels, Table):
        channels = tomlkit.table(is_super_table=True)
        document["channels"] = channels
    console = channels.get("console")
    if not isinstance(console, Table):
        console = tomlkit.table()
        channels["console"] = console
    console["enabled"] = False
    return tomlkit.dumps(document)


def carry(
    loaded: LoadedConfig,
    *,
    state_dir: str | None,
    secrets_name: str,
    environ: Mapping[str, str] = os.environ,
) -> Carried:
    """The person's configuration and secrets, for the service (``loaded.path`` set)."""
    assert loaded.path is not None
    config = service_toml(loaded.path.read_text(encoding="utf-8"), state_dir)
    validate(Settings, tomlkit.parse(config).unwrap(), display_path(loaded.path))
    shown = display_path(loaded.path)
    service_state = state_dir or "the user's default state folder"
    used = (
        f"used {shown}: the console turned off, state in {service_state} (the state of "
        f"{loaded.state_dir} stays where it is)"
    )
    notes = [used]
    beside = loaded.path.parent / secrets_name
    kept = read_secrets(beside) if beside.is_file() else {}
    values: dict[str, str] = {}
    from_file, from_env, missing = [], [], []
    for name in [*needed_env(loaded), *kept]:
        if name in values:
            continue
        if kept.get(name):
            values[name] = kept[name]
            from_file.append(name)
        elif environ.get(name, "").strip():
            values[name] = environ[name].strip()
            from_env.append(name)
        else:
            values[name] = ""
            missing.append(name)
    if from_file:
        notes.append(f"secrets from {display_path(beside)}: {', '.join(from_file)}")
    if from_env:
        notes.append(f"secrets from this shell's environment: {', '.join(from_env)}")
    secrets = SECRETS_HEADER + "".join(f"{name}={value}\n" for name, value in values.items())
    return Carried(config, secrets, notes, missing)
