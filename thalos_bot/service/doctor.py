"""``thalos-bot doctor``: check everything the daemon needs, one line per item.

Checks run in order and never stop early except when the configuration itself is
invalid (everything else depends on it). Network checks (the Anthropic endpoint, a
channel's API) are skipped with ``--offline``.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from pathlib import Path

import anyio
from pydantic import BaseModel

from thalos_bot.channels.checks import Check, DoctorChecks, Outcome, unreachable
from thalos_bot.channels.registry import ChannelPlugin, discover, validate_channels
from thalos_bot.config.loader import ConfigError, LoadedConfig, load_settings
from thalos_bot.config.skills import skills_base_dir
from thalos_bot.domain.messages import Message
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.providers.base import ModelRequest, ProviderError
from thalos_bot.providers.factory import API_KEY_ENV, build_provider
from thalos_bot.service.doctor_schema import schema_check
from thalos_bot.service.doctor_security import held_skills
from thalos_bot.service.doctor_setup import setup_warnings
from thalos_bot.service.doctor_speech import speech_checks, speech_env
from thalos_bot.service.install import SECRETS_NAME
from thalos_bot.service.provider_checks import provider_checks, provider_env, uses_default
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.skills.discovery import scan_roots
from thalos_bot.skills.grammar import GrammarOptions
from thalos_bot.storage.private import ensure_private_dir, loose_modes

ANTHROPIC_CHECK_TIMEOUT = 30.0


async def run_doctor(config_path: Path | None, *, offline: bool) -> list[Check]:
    try:
        loaded = load_settings(config_path)
        plugins = discover()
        channel_configs = validate_channels(loaded.settings, loaded.label, plugins)
    except ConfigError as exc:
        fix = "edit the key each line names; `thalos-bot check` says when the file is valid"
        return [Check("configuration", "fail", problem, fix) for problem in exc.problems]
    checks = [Check("configuration", "ok", loaded.label)]
    enabled = {
        name: (plugins[name], channel_configs[name]) for name in loaded.settings.enabled_channels()
    }
    state = _state_dir(loaded)
    checks.append(state)
    checks.extend(_state_modes(loaded))
    if state.outcome == "fail":
        checks.append(Check(DATABASE, "skip", "the state folder is not usable"))
    else:
        checks.append(_database(loaded))
    checks.extend(setup_warnings(loaded))
    checks.extend(_environment(loaded, enabled))
    checks.append(await _anthropic(loaded, offline=offline))
    checks.extend(await provider_checks(loaded, offline=offline))
    for name, (plugin, config) in enabled.items():
        if isinstance(plugin, DoctorChecks):
            checks.extend(await plugin.doctor(config, offline=offline))
        else:
            checks.append(Check(f"channel {name}", "ok", "nothing to check"))
    checks.extend(speech_checks(loaded))
    checks.extend(await _mcp_servers(loaded))
    checks.append(_skills(loaded))
    held = held_skills(loaded)
    if held.outcome == "warn":
        checks.append(held)
    return checks


def _state_dir(loaded: LoadedConfig) -> Check:
    folder = loaded.state_dir
    try:
        ensure_private_dir(folder)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-", delete=True) as probe:
            probe.write(b"ok")
    except OSError as exc:
        return Check(
            "state directory writable",
            "fail",
            f"{folder}: {exc.strerror or type(exc).__name__}",
            "`thalos-bot doctor --fix` makes a missing folder and mends modes; a folder "
            "owned by another user needs chown, or point state_dir / $THALOS_BOT_STATE_DIR "
            "at a folder this user can write",
        )
    return Check("state directory writable", "ok", str(folder))


def _state_modes(loaded: LoadedConfig) -> list[Check]:
    """A warning per state file or folder others may read (made before modes were set)."""
    return [
        Check("state files private", "warn", loose, "`thalos-bot doctor --fix` sets the mode")
        for loose in loose_modes(loaded.state_dir)
    ]


DATABASE = "database and migrations"


def _database(loaded: LoadedConfig) -> Check:
    name = DATABASE
    if loaded.settings.storage.target.kind == "postgresql":
        from thalos_bot.service.doctor_shared import shared_database  # loads psycopg

        return shared_database(loaded, name)
    path = loaded.database_path
    if not path.exists():
        return Check(name, "ok", f"{path} will be created at the first start")
    if path.is_file() and path.stat().st_size == 0:
        return Check(
            name,
            "fail",
            f"{path}: the file is empty (0 bytes): no database is in it, and `run` refuses it",
            "restore the database from a backup, or delete the empty file to start anew",
        )
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            quick = conn.execute("PRAGMA quick_check").fetchone()[0]
            tables = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
            ).fetchone()
            applied = (
                [row[0] for row in conn.execute("SELECT name FROM schema_migrations")]
                if tables
                else []
            )
    except sqlite3.Error as exc:
        return Check(
            name,
            "fail",
            f"{path}: {exc}",
            "stop the daemon; if the file is damaged, move it aside (a new one is made at "
            "the next start) or restore a backup",
        )
    if quick != "ok":
        return Check(
            name,
            "fail",
            f"{path}: integrity check says {quick}",
            "stop the daemon, then `sqlite3 thalos.db .recover` into a new file, or restore "
            "a backup",
        )
    return schema_check(
        name,
        str(path),
        applied,
        [m.name for m in ALL_MIGRATIONS],
        "upgrade thalos-bot to the version that wrote it (a downgrade cannot read it)",
    )


def secret_fix(loaded: LoadedConfig, variable: str) -> str:
    """Where this setup keeps its secrets: the secrets file beside its bot.toml (as
    ``init`` and ``service install`` write it), else the shell's environment."""
    if loaded.path is None:
        return f"export {variable}=... in this shell before starting thalos-bot"
    secrets = loaded.path.resolve().parent / SECRETS_NAME
    if loaded.path.resolve().parent == Path("/etc/thalos-bot"):
        return f"put {variable}=... in the unit's EnvironmentFile ({secrets})"
    return (
        f"put {variable}=... in {secrets} (`set -a; . {secrets}; set +a` loads it into "
        "this shell), or export it"
    )


def _environment(
    loaded: LoadedConfig, enabled: dict[str, tuple[ChannelPlugin, BaseModel]]
) -> list[Check]:
    required: list[tuple[str, str]] = []
    if loaded.settings.provider.kind == "anthropic" and uses_default(loaded):
        required.append((API_KEY_ENV, "the Anthropic provider"))
    required.extend(provider_env(loaded))
    required.extend(speech_env(loaded))
    shared = loaded.settings.storage.target.kind == "postgresql"
    for name, (plugin, config) in enabled.items():
        if isinstance(plugin, DoctorChecks):
            needed = plugin.required_env(config, shared=shared)
            required.extend((var, f"channel {name}") for var in needed)
    from thalos_bot.config.tools import ENV_REFERENCE

    for server in loaded.settings.mcp_servers:
        if not server.enabled:
            continue
        for value in [*server.env.values(), *server.headers.values()]:
            required.extend(
                (m.group(1), f"MCP server {server.name}") for m in ENV_REFERENCE.finditer(value)
            )
    checks = []
    for variable, user in dict.fromkeys(required):
        if os.environ.get(variable):
            checks.append(Check(f"{variable} is set", "ok", f"for {user}"))
        else:
            checks.append(
                Check(
                    f"{variable} is set",
                    "fail",
                    f"not set (needed by {user})",
                    secret_fix(loaded, variable),
                )
            )
    return checks


async def _anthropic(loaded: LoadedConfig, *, offline: bool) -> Check:
    settings = loaded.settings.provider
    name = "Anthropic endpoint answers"
    if settings.kind != "anthropic" or not uses_default(loaded):
        return Check(
            name,
            "skip",
            f"the provider is {settings.kind!r}"
            if settings.kind != "anthropic"
            else "no agent uses [provider]",
        )
    if offline:
        return Check(name, "skip", "--offline")
    if not os.environ.get(API_KEY_ENV):
        return Check(name, "skip", f"{API_KEY_ENV} is not set")
    provider = build_provider(settings)
    request = ModelRequest(
        model=settings.model,
        max_output_tokens=1,
        system=[SystemPart("Reply with one word.")],
        messages=[Message.user("ping")],
    )
    started = time.monotonic()
    try:
        with anyio.fail_after(ANTHROPIC_CHECK_TIMEOUT):
            async for _event in provider.stream(request):
                pass
    except ProviderError as exc:
        return _provider_failed(name, exc, settings.base_url or ANTHROPIC_URL)
    except TimeoutError:
        return Check(
            name,
            "fail",
            f"no answer from {settings.base_url or ANTHROPIC_URL} within "
            f"{ANTHROPIC_CHECK_TIMEOUT:.0f}s",
            "check the network and any proxy (HTTPS_PROXY), then run doctor again",
        )
    finally:
        await provider.aclose()
    return Check(name, "ok", f"{settings.model} answered in {time.monotonic() - started:.1f}s")


ANTHROPIC_URL = "https://api.anthropic.com"


def _provider_failed(name: str, exc: ProviderError, url: str) -> Check:
    """A failed call: an unreachable endpoint says where and why; a refusal, what to fix."""
    # Imported here, as is MCP below: the SDKs take a second to load, and most of
    # doctor's runs (--offline, no MCP server) never need them.
    from thalos_bot.providers.anthropic_mapping import UNREACHABLE

    if exc.user_message == UNREACHABLE:
        fix = "check the network and any proxy (HTTPS_PROXY), or [provider] base_url"
        return unreachable(name, url, exc, fix)
    if API_KEY_ENV in exc.user_message:
        fix = f"copy the key again from console.anthropic.com into {API_KEY_ENV}"
    else:
        fix = "see the line above; the provider's status page tells of outages"
    return Check(name, "fail", exc.user_message, fix)


async def _mcp_servers(loaded: LoadedConfig) -> list[Check]:
    servers = loaded.settings.mcp_servers
    if not servers:
        return [Check("MCP servers", "ok", "none configured")]
    from thalos_bot.tools.mcp import McpServers

    checks = []
    async with McpServers.start(servers, loaded.settings.tools) as started:
        for source in started.sources:
            status = source.status()
            outcome: Outcome = (
                "ok"
                if status.state == "ready"
                else "skip"
                if status.state == "disabled"
                else "fail"
            )
            fix = (
                "`thalos-bot tools` starts it and shows its error; check its command and env"
                if outcome == "fail"
                else ""
            )
            checks.append(Check(f"MCP server {source.name}", outcome, status.describe(), fix))
    return checks


def _skills(loaded: LoadedConfig) -> Check:
    settings = loaded.settings.skills
    roots = settings.resolved_roots(skills_base_dir(loaded.path))
    result = scan_roots(roots, GrammarOptions(allow_unknown_keys=settings.allow_unknown_keys))
    problems = [line for error in (*result.errors, *result.outside) for line in error.lines()]
    explicit = "roots" in settings.model_fields_set
    problems += [
        f"{problem.root}: {problem.reason}"
        for problem in result.unreadable_roots
        if explicit or problem.root.exists()
    ]
    if problems:
        return Check(
            "skills load",
            "fail",
            "; ".join(problems),
            "`thalos-bot skills check` lists each file's problems; fix or move those files",
        )
    return Check("skills load", "ok", f"{len(result.skills)} skill(s) from {len(roots)} root(s)")
