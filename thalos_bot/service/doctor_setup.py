"""``thalos-bot doctor`` warnings about how the pieces fit: settings that are valid on
their own but will not do what their writer meant."""

from __future__ import annotations

import os
import sqlite3
import stat
import sys

from thalos_bot.channels.checks import Check
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.domain.address import Address
from thalos_bot.service.doctor_fix import secrets_file
from thalos_bot.service.status import read_status


def setup_warnings(loaded: LoadedConfig) -> list[Check]:
    return [
        *_daemon(loaded),
        *_secrets_mode(loaded),
        *_state_dir_source(loaded),
        *_console_terminal(loaded),
        *_schedules(loaded),
    ]


def _daemon(loaded: LoadedConfig) -> list[Check]:
    """A running daemon that is degraded (a channel not reached yet) or hangs."""
    daemon = read_status(loaded.state_dir)
    if daemon is None or not daemon.running:
        return []
    if daemon.stale:
        return [
            Check(
                "daemon responds",
                "warn",
                f"pid {daemon.pid} has written no heartbeat lately",
                "systemd's watchdog restarts it; otherwise restart it by hand",
            )
        ]
    if daemon.state == "degraded":
        return [
            Check(
                "daemon fully ready",
                "warn",
                f"degraded: {daemon.detail}",
                "`thalos-bot status` shows each channel's last error; check the network",
            )
        ]
    return [Check("daemon running", "ok", f"pid {daemon.pid}, {daemon.state}")]


def _secrets_mode(loaded: LoadedConfig) -> list[Check]:
    path = secrets_file(loaded)
    if path is None:
        return []
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return []
    if not mode & 0o077:
        return []
    return [
        Check(
            "secrets file private",
            "warn",
            f"{path} is {mode:04o}: others may read the keys in it",
            "`thalos-bot doctor --fix` sets it to 0600",
        )
    ]


def _state_dir_source(loaded: LoadedConfig) -> list[Check]:
    """``state_dir`` in the file silently beats systemd's ``$STATE_DIRECTORY``."""
    systemd = os.environ.get("STATE_DIRECTORY")
    if loaded.settings.state_dir is None or not systemd:
        return []
    return [
        Check(
            "state folder from systemd",
            "warn",
            f"state_dir in {loaded.label} wins over $STATE_DIRECTORY ({systemd}), so the "
            f"database is in {loaded.state_dir}, which the unit's sandbox may not let it write",
            f"remove state_dir from {loaded.label} for the service",
        )
    ]


def _console_terminal(loaded: LoadedConfig) -> list[Check]:
    if "console" not in loaded.settings.enabled_channels() or sys.stdin.isatty():
        return []
    return [
        Check(
            "console has a terminal",
            "warn",
            "the console channel is enabled and there is no terminal here (as under "
            "systemd): alone it makes `run` refuse; beside other channels it reads nothing",
            f"set [channels.console] enabled = false in {loaded.label} for the service",
        )
    ]


def _schedules(loaded: LoadedConfig) -> list[Check]:
    """A schedule (from bot.toml, or made by the model) whose channel is not enabled."""
    enabled = set(loaded.settings.enabled_channels())
    targets = [
        (schedule.id, str(Address.parse(schedule.deliver_to).channel_id))
        for schedule in loaded.settings.schedules
    ]
    targets += _stored_targets(loaded)
    warned: list[Check] = []
    for schedule_id, channel in dict.fromkeys(targets):
        if str(channel) in enabled:
            continue
        warned.append(
            Check(
                f"schedule {schedule_id}",
                "warn",
                f"it delivers to the {channel} channel, which is not enabled: its runs "
                "would have nowhere to go",
                f"enable [channels.{channel}], or cancel it "
                f"(`thalos-bot schedules cancel {schedule_id}`) or change its deliver_to",
            )
        )
    return warned


def _stored_targets(loaded: LoadedConfig) -> list[tuple[str, str]]:
    if loaded.settings.storage.target.kind == "postgresql":
        from thalos_bot.service.doctor_shared import shared_schedule_targets  # loads psycopg

        return shared_schedule_targets(loaded)
    path = loaded.database_path
    if not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return [
                (str(row[0]), str(row[1]))
                for row in conn.execute(
                    "SELECT id, channel_id FROM schedules WHERE state = 'active' "
                    "AND origin != 'config' ORDER BY id"
                )
            ]
    except sqlite3.Error:  # no schedules table yet, or the database check reports it
        return []
