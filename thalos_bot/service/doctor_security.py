"""``thalos-bot doctor --security``: how exposed this setup is, one line per item.

For each listener a channel opens (its plug-in's :class:`ExposureChecks`): the address
it binds, who may use it, how TLS reaches it, its limits; the webhooks on the web
listener and their secrets. Then the modes of the state folder, the configuration and
the secrets file; the unit's ``systemd-analyze security`` figure (a note saying why
when it cannot be had); skills waiting for review; tools that run without asking
although they may write or reach the network; and who holds the admin role. Every ✗
carries its ``fix:``; a ``-`` is a note, never a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from thalos_bot.channels.checks import Check, ExposureChecks
from thalos_bot.channels.registry import (
    ChannelPlugin,
    discover,
    section_principals,
    validate_channels,
)
from thalos_bot.config.loader import ConfigError, LoadedConfig, load_settings
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.service.install import SECRETS_NAME, UNIT_NAME, Layout
from thalos_bot.storage.private import loose_modes
from thalos_bot.tools.policy import PolicySet

ADMIN = "admin"
PROBE = "\x00any-tool"
"""A tool name no server has: what a policy says about it is what it says about every
tool of the server not named more precisely."""
UNSAFE_LEVELS = frozenset({"EXPOSED", "UNSAFE"})
"""``systemd-analyze security`` levels that are a ✗ (OK and MEDIUM pass)."""
ANALYZE_TIMEOUT = 60.0
_OVERALL = re.compile(r"Overall exposure level for \S+:\s*([0-9.]+)\s+([A-Z]+)")

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


def security_checks(
    config_path: Path | None,
    *,
    which: Callable[[str], str | None] = shutil.which,
    run: Runner | None = None,
    unit_paths: Sequence[Path] | None = None,
) -> list[Check]:
    try:
        loaded = load_settings(config_path)
        plugins = discover()
        configs = validate_channels(loaded.settings, loaded.label, plugins)
    except ConfigError as exc:
        fix = "edit the key each line names; `thalos-bot check` says when the file is valid"
        return [Check("configuration", "fail", problem, fix) for problem in exc.problems]
    enabled = {name: (plugins[name], configs[name]) for name in loaded.settings.enabled_channels()}
    checks = [Check("configuration", "ok", loaded.label)]
    checks.extend(listener_checks(enabled))
    checks.extend(hook_checks(loaded, web_on="web" in enabled))
    checks.extend(file_checks(loaded))
    paths = (
        unit_paths
        if unit_paths is not None
        else [Layout.for_mode(user=False).unit, Layout.for_mode(user=True).unit]
    )
    checks.append(systemd_check(paths, which=which, run=run or _analyze))
    checks.append(held_skills(loaded))
    checks.extend(tool_checks(loaded))
    checks.append(admins(loaded, {name: config for name, (_, config) in enabled.items()}))
    return checks


def listener_checks(enabled: dict[str, tuple[ChannelPlugin, BaseModel]]) -> list[Check]:
    checks: list[Check] = []
    for plugin, config in enabled.values():
        if isinstance(plugin, ExposureChecks):
            checks.extend(plugin.exposure(config))
    if not checks:
        checks.append(Check("listeners", "ok", "none: no enabled channel opens a port"))
    return checks


def hook_checks(loaded: LoadedConfig, *, web_on: bool) -> list[Check]:
    hooks = loaded.settings.hooks
    if not hooks:
        return []
    where = "the web listener (its bind, TLS and limits above)" if web_on else "nothing"
    checks = [
        Check(
            "webhook receiver",
            "ok",
            f"{len(hooks)} hook(s) served on {where}; each needs its signature",
        )
    ]
    for hook in hooks:
        name = f"webhook {hook.name} secret"
        if os.environ.get(hook.secret_env, "").strip():
            checks.append(Check(name, "ok", f"{hook.scheme} signature with ${hook.secret_env}"))
        else:
            checks.append(
                Check(
                    name,
                    "fail",
                    f"${hook.secret_env} is not set: every delivery to {hook.path} is refused",
                    f"put {hook.secret_env}=<a long random secret> in the secrets file "
                    f"({SECRETS_NAME}) and give the sender the same secret",
                )
            )
    return checks


def _others_may(path: Path, mask: int) -> str | None:
    """``"<path> is 0644"`` when ``path``'s mode has any bit of ``mask``; else None."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    return f"{path} is {mode:04o}" if mode & mask else None


def file_checks(loaded: LoadedConfig) -> list[Check]:
    checks: list[Check] = []
    loose = loose_modes(loaded.state_dir)
    if loose:
        checks.extend(
            Check(
                "state folder private",
                "fail",
                line,
                "`thalos-bot doctor --fix` sets the modes (0700 folder, 0600 files)",
            )
            for line in loose
        )
    elif loaded.state_dir.exists():
        checks.append(Check("state folder private", "ok", f"{loaded.state_dir} (0700)"))
    else:
        checks.append(
            Check(
                "state folder private", "ok", f"{loaded.state_dir} (not made yet; it will be 0700)"
            )
        )
    if loaded.path is not None:
        writable = _others_may(loaded.path, stat.S_IWGRP | stat.S_IWOTH)
        checks.append(
            Check(
                "configuration file",
                "fail",
                f"{writable}: others may change it",
                f"chmod go-w {loaded.path}",
            )
            if writable
            else Check("configuration file", "ok", f"{loaded.path}: only its owner writes it")
        )
        secrets = loaded.path.resolve().parent / SECRETS_NAME
        if secrets.exists():
            readable = _others_may(secrets, stat.S_IRWXG | stat.S_IRWXO)
            checks.append(
                Check(
                    "secrets file",
                    "fail",
                    f"{readable}: others may read it",
                    f"chmod 600 {secrets}",
                )
                if readable
                else Check("secrets file", "ok", f"{secrets} (0600)")
            )
        else:
            checks.append(Check("secrets file", "ok", "none beside the configuration"))
    return checks


def _analyze(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - a fixed command line
        command, capture_output=True, text=True, check=False, timeout=ANALYZE_TIMEOUT
    )


def systemd_check(
    unit_paths: Sequence[Path], *, which: Callable[[str], str | None], run: Runner
) -> Check:
    name = "service sandbox (systemd-analyze security)"
    tool = which("systemd-analyze")
    if tool is None:
        return Check(name, "skip", "skipped: systemd-analyze is not on this machine")
    installed = [path for path in unit_paths if path.exists()]
    if not installed:
        return Check(
            name, "skip", "skipped: the unit is not installed (`thalos-bot service install`)"
        )
    command = [tool, "security", "--no-pager", UNIT_NAME]
    if Layout.for_mode(user=True).unit in installed and len(installed) == 1:
        command.insert(1, "--user")
    try:
        result = run(command)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(
            name, "skip", f"skipped: systemd-analyze did not answer ({type(exc).__name__})"
        )
    found = _OVERALL.search(result.stdout + result.stderr)
    if found is None:
        why = (result.stderr.strip().splitlines() or ["no overall figure in its output"])[-1]
        return Check(name, "skip", f"skipped: {why}")
    score, level = float(found.group(1)), found.group(2)
    detail = f"{installed[0]}: exposure {score:.1f} {level} (0 is the best, 10 the worst)"
    if level in UNSAFE_LEVELS:
        return Check(
            name,
            "fail",
            detail,
            "reinstall the unit with `thalos-bot service install` (its sandboxing gives "
            "about 2 OK), and keep any drop-in from removing its Protect*/Restrict* lines",
        )
    return Check(name, "ok", detail)


def held_skills(loaded: LoadedConfig) -> Check:
    name = "skills reviewed"
    if loaded.settings.storage.target.kind == "postgresql":
        return Check(name, "skip", "see `thalos-bot skills review` (held skills are in PostgreSQL)")
    path = loaded.database_path
    if not path.exists():
        return Check(name, "ok", "no database yet: the first sync accepts the skills it finds")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            table = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='skill_holds'"
            ).fetchone()
            rows = (
                conn.execute("SELECT name, reason FROM skill_holds ORDER BY name").fetchall()
                if table
                else []
            )
    except sqlite3.Error as exc:
        return Check(name, "skip", f"{path}: {exc}")
    if not rows:
        return Check(name, "ok", "every skill loads as it was accepted")
    held = ", ".join(f"{row[0]} ({row[1]})" for row in rows)
    return Check(
        name,
        "warn",
        f"{len(rows)} held, not loaded until reviewed: {held}",
        "`thalos-bot skills review` lists them; `thalos-bot skills review NAME` shows the diff",
    )


def _server_kind(server: McpServerSettings) -> str:
    if server.url is not None:
        return f"reached at {server.url}"
    return f"runs {server.command}"


def tool_checks(loaded: LoadedConfig) -> list[Check]:
    settings = loaded.settings
    policies = PolicySet.from_settings(settings.tool_policies)
    checks: list[Check] = []
    for server in settings.mcp_servers:
        if not server.enabled:
            continue
        name = f"tools of {server.name} ask first"
        action = policies.action(f"{server.name}__{PROBE}")
        allowed = [
            p.tool
            for p in settings.tool_policies
            if p.action == "allow" and p.tool.startswith(f"{server.name}__")
        ]
        if action == "allow":
            checks.append(
                Check(
                    name,
                    "fail",
                    f"{server.name} {_server_kind(server)}: its tools run without asking, "
                    "and they may write files or reach the network",
                    f'add [[tool_policies]] tool = "{server.name}__*" action = "ask" (or '
                    '"deny"), then allow the read-only ones by name',
                )
            )
        else:
            more = f"; allowed without asking: {', '.join(allowed)}" if allowed else ""
            checks.append(Check(name, "ok", f"{server.name}__*: {action}{more}"))
    if not checks:
        checks.append(
            Check(
                "tools without approval", "ok", "no MCP server: the built-in tools stay in the bot"
            )
        )
    return checks


def admins(loaded: LoadedConfig, configs: dict[str, BaseModel]) -> Check:
    granted, _ = section_principals(configs)
    holders = [principal for principal, roles in granted if ADMIN in roles]
    holders += [p.id for p in loaded.settings.people if ADMIN in p.roles]
    holders += [h.principal for h in loaded.settings.hooks if ADMIN in h.roles]
    unique = list(dict.fromkeys(holders))
    if not unique:
        return Check("admin role", "ok", "nobody holds it")
    return Check("admin role", "ok", f"held by {', '.join(unique)}")
