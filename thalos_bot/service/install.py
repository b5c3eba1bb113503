"""``thalos-bot service install [--user]`` and ``service uninstall``: the whole systemd
set-up in one step, and its undoing.

Install writes the configuration folder (``/etc/thalos-bot/``, or the user's config
folder with ``--user``): a ``bot.toml`` without ``state_dir`` and with the console off
(the service uses systemd's ``$STATE_DIRECTORY`` and has no terminal), and the secrets
file at 0600. It writes the unit with ``ExecStart`` pointing at the program that is
running, refuses an interpreter that ``ProtectHome=yes`` would hide (pyenv, uv-managed
Python) unless told, runs ``systemd-analyze verify`` where it exists, reloads systemd,
and prints the next commands. A manifest of what it wrote (with checksums) lets
uninstall remove exactly those files and keep any the operator has since edited.

``root`` prefixes every path written (like ``DESTDIR``), for packaging and tests; the
files themselves name the real paths, and systemd is neither reloaded nor asked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs
import tomlkit

from thalos_bot.shipped import shipped
from thalos_bot.storage.private import FILE_MODE

UNIT_NAME = "thalos-bot.service"
SECRETS_NAME = "thalos-bot.env"
MANIFEST = ".service-install.json"
HIDDEN_BY_PROTECT_HOME = (Path("/home"), Path("/root"), Path("/run/user"))

Run = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


class InstallError(Exception):
    """Install or uninstall cannot go on; ``message`` says why and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the pieces go, as the service will see them (before any ``root``)."""

    user: bool
    config_dir: Path
    unit_dir: Path

    @classmethod
    def for_mode(cls, *, user: bool) -> Layout:
        if user:
            config = Path(platformdirs.user_config_dir("thalos-bot", appauthor=False))
            return cls(
                user=True,
                config_dir=config,
                unit_dir=Path(platformdirs.user_config_dir("systemd")) / "user",
            )
        return cls(
            user=False, config_dir=Path("/etc/thalos-bot"), unit_dir=Path("/etc/systemd/system")
        )

    @property
    def config(self) -> Path:
        return self.config_dir / "bot.toml"

    @property
    def secrets(self) -> Path:
        return self.config_dir / SECRETS_NAME

    @property
    def unit(self) -> Path:
        return self.unit_dir / UNIT_NAME


@dataclass(slots=True)
class Report:
    """What install or uninstall did, and what to run next."""

    done: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)


def running_command() -> list[str]:
    """The command that runs this very program: its ``thalos-bot`` script, or the
    interpreter with ``-m thalos_bot``."""
    script = Path(sys.argv[0])
    if script.name == "thalos-bot" and script.is_file():
        return [str(script.absolute())]
    beside = Path(sys.executable).parent / "thalos-bot"
    if beside.is_file():
        return [str(beside)]
    return [sys.executable, "-m", "thalos_bot"]


def hidden_by_protect_home(paths: list[Path]) -> Path | None:
    """The first of ``paths`` (resolved) that ``ProtectHome=yes`` would hide."""
    for path in paths:
        resolved = path.resolve()
        for hidden in HIDDEN_BY_PROTECT_HOME:
            if resolved.is_relative_to(hidden):
                return resolved
    return None


def _program_paths(command: list[str]) -> list[Path]:
    return [Path(command[0]), Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix)]


def unit_text(layout: Layout, command: list[str], *, protect_home: str) -> str:
    """The shipped unit, made to run ``command`` with this layout's files."""
    text = shipped("thalos-bot.service").read_text(encoding="utf-8")
    exec_start = " ".join([*command, "run", "--config", str(layout.config)])
    text = re.sub(r"^ExecStart=.*$", f"ExecStart={exec_start}", text, flags=re.MULTILINE)
    text = re.sub(
        r"^EnvironmentFile=.*$", f"EnvironmentFile={layout.secrets}", text, flags=re.MULTILINE
    )
    text = re.sub(r"^ProtectHome=.*$", f"ProtectHome={protect_home}", text, flags=re.MULTILINE)
    text = re.sub(
        r"^Documentation=.*$", f"Documentation={_documentation()}", text, flags=re.MULTILINE
    )
    if layout.user:
        text = _user_unit(text)
    return text


def _documentation() -> str:
    try:
        return shipped("deploy-README.md").as_uri()
    except LookupError:
        return "https://github.com/thalos-bot/thalos-bot/blob/main/deploy/README.md"


# Directives a user manager cannot apply (no privileges to drop, no user to create).
_SYSTEM_ONLY = re.compile(
    r"^(DynamicUser|PrivateUsers|CapabilityBoundingSet|AmbientCapabilities|ProtectKernel\w+|"
    r"ProtectClock|ProtectHostname|PrivateDevices|DevicePolicy|ProtectControlGroups|"
    r"RestrictNamespaces|PrivateMounts|ProtectProc|ProcSubset|KeyringMode|RemoveIPC|"
    r"SystemCallFilter|SystemCallErrorNumber|WorkingDirectory)=.*\n",
    re.MULTILINE,
)


def _user_unit(text: str) -> str:
    text = _SYSTEM_ONLY.sub("", text)
    text = text.replace("WantedBy=multi-user.target", "WantedBy=default.target")
    return re.sub(r"^ProtectHome=.*$", "ProtectHome=no", text, flags=re.MULTILINE)


def service_config() -> str:
    """The shipped ``bot.toml`` made fit for a service: no ``state_dir`` (systemd's
    ``$STATE_DIRECTORY`` is used) and the console off (a service has no terminal)."""
    document = tomlkit.parse(shipped("bot.toml").read_text(encoding="utf-8"))
    document.pop("state_dir", None)
    channels = document.get("channels")
    if channels is None:
        channels = tomlkit.table(is_super_table=True)
        document["channels"] = channels
    console = channels.get("console")
    if console is None:
        console = tomlkit.table()
        channels["console"] = console
    console["enabled"] = False
    return tomlkit.dumps(document)


SECRETS_TEXT = """\
# Secrets for thalos-bot, read by systemd (EnvironmentFile=) before it drops privileges.
# Keep this file 0600. Values that bot.toml references as "${NAME}" go here too.
ANTHROPIC_API_KEY=
TELEGRAM_BOT_TOKEN=
"""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _under(root: Path | None, path: Path) -> Path:
    return path if root is None else root / path.relative_to(path.anchor)


def _write_new(target: Path, text: str, mode: int, report: Report, written: dict[str, str]) -> None:
    if target.exists():
        report.kept.append(f"kept {target} (it exists)")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(text)
    target.chmod(mode)
    written[str(target)] = _digest(target)
    report.done.append(f"wrote {target} (mode {mode:04o})")


def install(
    *,
    user: bool,
    root: Path | None = None,
    allow_home: bool = False,
    run: Run = _run,
    command: list[str] | None = None,
) -> Report:
    layout = Layout.for_mode(user=user)
    command = command or running_command()
    report = Report()
    protect_home = "no" if user else "yes"
    if not user:
        if root is None and os.geteuid() != 0:
            raise InstallError(
                "a system service is installed as root: run `sudo thalos-bot service "
                "install`, or `thalos-bot service install --user` for your own user"
            )
        hidden = hidden_by_protect_home(_program_paths(command))
        if hidden is not None and not allow_home:
            raise InstallError(
                f"the program runs from {hidden}, which the unit's ProtectHome=yes hides from "
                "the service (pyenv and uv-managed Pythons live there). Install it under "
                "/opt (python3 -m venv /opt/thalos-bot/venv with the system python3, then "
                "/opt/thalos-bot/venv/bin/thalos-bot service install), or pass --allow-home "
                "to write ProtectHome=read-only instead"
            )
        if hidden is not None:
            protect_home = "read-only"
            report.warnings.append(f"ProtectHome=read-only, not yes: the program lives in {hidden}")
    written: dict[str, str] = {}
    config_dir = _under(root, layout.config_dir)
    _write_new(config_dir / "bot.toml", service_config(), 0o644, report, written)
    _write_new(config_dir / SECRETS_NAME, SECRETS_TEXT, FILE_MODE, report, written)
    unit = _under(root, layout.unit)
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text(unit_text(layout, command, protect_home=protect_home), encoding="utf-8")
    unit.chmod(0o644)
    written[str(unit)] = _digest(unit)
    report.done.append(f"wrote {unit}")
    manifest = config_dir / MANIFEST
    recorded = {**_recorded(manifest), **written}  # an earlier install's files stay listed
    manifest.write_text(json.dumps({"files": recorded}, indent=2), encoding="utf-8")
    _verify(unit, run, report)
    systemctl = ["systemctl", "--user"] if user else ["systemctl"]
    if root is None:
        reloaded = run([*systemctl, "daemon-reload"])
        if reloaded.returncode == 0:
            report.done.append(f"ran {' '.join(systemctl)} daemon-reload")
        else:
            report.warnings.append(f"{' '.join(systemctl)} daemon-reload failed; run it yourself")
    else:
        report.next_steps.append(f"{' '.join(systemctl)} daemon-reload")
    edit = f"$EDITOR {layout.secrets}" if user else f"sudoedit {layout.secrets}"
    program = command[0] if len(command) == 1 else " ".join(command)
    with_secrets = f"set -a; . {layout.secrets}; set +a; exec {program}"
    state = "" if user else "THALOS_BOT_STATE_DIR=/var/lib/thalos-bot "
    sudo = "" if user else "sudo "
    report.next_steps += [
        f"{edit}   # ANTHROPIC_API_KEY and TELEGRAM_BOT_TOKEN",
        f"{sudo}sh -c '{with_secrets} telegram pair --config {layout.config}'",
        f"{' '.join(systemctl)} enable --now thalos-bot",
        f"{sudo}{state}{program} status --config {layout.config}",
        f"{sudo}{state}{program} logs -f --config {layout.config}",
    ]
    return report


def _recorded(manifest: Path) -> dict[str, str]:
    """The files an install recorded in ``manifest`` (none when there is none)."""
    try:
        files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def _verify(unit: Path, run: Run, report: Report) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        report.warnings.append("systemd-analyze is not installed: the unit was not verified")
        return
    result = run([analyze, "verify", str(unit)])
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if UNIT_NAME in line]
        raise InstallError(
            f"systemd-analyze verify refused {unit}: "
            + ("; ".join(lines) or result.stderr.strip() or "no reason given")
        )
    report.done.append(f"systemd-analyze verify {unit}: fine")


def uninstall(*, user: bool, root: Path | None = None, run: Run = _run) -> Report:
    """Stop and disable the unit, then remove what install wrote and nobody changed."""
    layout = Layout.for_mode(user=user)
    report = Report()
    config_dir = _under(root, layout.config_dir)
    manifest = config_dir / MANIFEST
    written = _recorded(manifest)
    if not written:
        raise InstallError(
            f"no install record at {manifest}: nothing was installed there by "
            "`thalos-bot service install`"
        )
    systemctl = ["systemctl", "--user"] if user else ["systemctl"]
    if root is None:
        run([*systemctl, "disable", "--now", "thalos-bot"])
        report.done.append(f"ran {' '.join(systemctl)} disable --now thalos-bot")
    for name, digest in written.items():
        path = Path(name)
        if not path.exists():
            continue
        if _digest(path) != digest:
            report.kept.append(f"kept {path} (changed since install)")
            continue
        path.unlink()
        report.done.append(f"removed {path}")
    manifest.unlink()
    if config_dir.is_dir() and not any(config_dir.iterdir()):
        config_dir.rmdir()
        report.done.append(f"removed {config_dir}")
    if root is None:
        run([*systemctl, "daemon-reload"])
        report.done.append(f"ran {' '.join(systemctl)} daemon-reload")
    state = "~/.local/state/thalos-bot" if user else "/var/lib/thalos-bot"
    report.kept.append(f"the state (database, logs) stays in {state}; remove it by hand")
    return report
