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

Every folder and file gets an explicit mode, whatever the umask: folders 0755 (0700 for
``--user``), the unit and ``bot.toml`` 0644, the secrets and the manifest 0600. The
manifest only vouches for checksums: uninstall removes nothing but the three files an
install writes, and refuses a manifest (or a folder) that others could have written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from thalos_bot.config.loader import ConfigError, LoadedConfig
from thalos_bot.providers.factory import API_KEY_ENV
from thalos_bot.service.carry import SECRETS_HEADER, carry, service_toml
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


PRIVATE_TMP = (Path("/tmp"), Path("/var/tmp"))  # noqa: S108 - what PrivateTmp=yes hides


def hidden_by_private_tmp(paths: list[Path]) -> Path | None:
    """The first of ``paths`` (resolved) under a folder ``PrivateTmp=yes`` replaces."""
    for path in paths:
        resolved = path.resolve()
        if any(resolved.is_relative_to(folder.resolve()) for folder in PRIVATE_TMP):
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


SYSTEM_STATE = "/var/lib/thalos-bot"
"""The system service's state folder (``StateDirectory=thalos-bot``)."""


def service_config(state_dir: str | None = None) -> str:
    """The shipped ``bot.toml`` made fit for a service (see
    :func:`~thalos_bot.service.carry.service_toml`): ``state_dir`` names the service's
    folder, ``$STATE_DIRECTORY``, so that commands run for it by hand (``sudo thalos-bot
    web pair``, ``status``) use the daemon's folder rather than root's own; without one
    (a user service, whose folder is the user's default anyway), none."""
    return service_toml(shipped("bot.toml").read_text(encoding="utf-8"), state_dir)


SECRETS_TEXT = SECRETS_HEADER + "ANTHROPIC_API_KEY=\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _under(root: Path | None, path: Path) -> Path:
    return path if root is None else root / path.relative_to(path.anchor)


DIR_MODE, USER_DIR_MODE = 0o755, 0o700
PUBLIC_FILE = 0o644
_OTHERS_WRITE = 0o022


def _make_dirs(folder: Path, mode: int) -> None:
    """``folder`` and its missing parents, each made with ``mode`` whatever the umask
    (folders that exist keep theirs)."""
    missing: list[Path] = []
    for path in (folder, *folder.parents):
        if path.is_dir():
            break
        missing.append(path)
    for path in reversed(missing):
        path.mkdir(mode=mode, exist_ok=True)
        path.chmod(mode)


def _write_file(target: Path, text: str, mode: int, *, replace: bool) -> None:
    """``target`` with ``text`` and exactly ``mode`` (never through a symlink): made
    beside it, then renamed over it when ``replace``, else only if it does not exist."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
        if replace:
            temporary.replace(target)
        else:
            os.link(temporary, target)  # fails if target exists (even as a symlink)
    finally:
        temporary.unlink(missing_ok=True)


def _write_new(target: Path, text: str, mode: int, report: Report, written: dict[str, str]) -> None:
    if target.exists() or target.is_symlink():
        report.kept.append(f"kept {target} (it exists)")
        return
    _write_file(target, text, mode, replace=False)
    written[str(target)] = _digest(target)
    report.done.append(f"wrote {target} (mode {mode:04o})")


def install(
    *,
    user: bool,
    root: Path | None = None,
    allow_home: bool = False,
    run: Run = _run,
    command: list[str] | None = None,
    source: LoadedConfig | None = None,
) -> Report:
    """``source``: the person's configuration (its file and the secrets beside it are
    carried over); None: the shipped sample, every channel off."""
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
    temporary = hidden_by_private_tmp(_program_paths(command))
    if temporary is not None and root is not None:
        # Packaging into a root: the program there is not this one; say it, go on.
        report.warnings.append(f"the program runs from {temporary}, which PrivateTmp=yes hides")
    elif temporary is not None:
        raise InstallError(
            f"the program runs from {temporary}, which the unit's PrivateTmp=yes hides from "
            "the service (it gets a /tmp of its own). Install it where it stays, e.g. "
            "python3 -m venv /opt/thalos-bot/venv, then run its thalos-bot service install"
        )
    written: dict[str, str] = {}
    config_dir = _under(root, layout.config_dir)
    dir_mode = USER_DIR_MODE if user else DIR_MODE
    _make_dirs(config_dir, dir_mode)
    config_dir.chmod(dir_mode)  # an earlier, looser folder too: it holds the manifest
    state = None if user else SYSTEM_STATE
    if source is not None and source.path is not None:
        try:
            carried = carry(source, state_dir=state, secrets_name=SECRETS_NAME)
        except ConfigError as exc:
            raise InstallError(
                "the configuration could not serve a service: " + "; ".join(exc.problems)
            ) from None
        config, secrets, missing = carried.config, carried.secrets, carried.missing
        report.done += carried.notes
    else:
        config, secrets, missing = service_config(state), SECRETS_TEXT, [API_KEY_ENV]
        report.done.append(
            "no bot.toml here (nor --config, nor $THALOS_BOT_CONFIG): wrote the sample, "
            "every channel off"
        )
    _write_new(config_dir / "bot.toml", config, PUBLIC_FILE, report, written)
    _write_new(config_dir / SECRETS_NAME, secrets, FILE_MODE, report, written)
    unit = _under(root, layout.unit)
    _make_dirs(unit.parent, dir_mode)
    text = unit_text(layout, command, protect_home=protect_home)
    _write_file(unit, text, PUBLIC_FILE, replace=True)
    written[str(unit)] = _digest(unit)
    report.done.append(f"wrote {unit}")
    manifest = config_dir / MANIFEST
    recorded = {**_recorded(manifest), **written}  # an earlier install's files stay listed
    _write_file(manifest, json.dumps({"files": recorded}, indent=2), FILE_MODE, replace=True)
    _verify(unit, run, report)
    systemctl = ["systemctl", "--user"] if user else ["systemctl"]
    if root is None:
        _systemctl(run, [*systemctl, "daemon-reload"], report)
    else:
        report.next_steps.append(f"{' '.join(systemctl)} daemon-reload")
    editor = "$EDITOR" if user else "sudoedit"
    program = command[0] if len(command) == 1 else " ".join(command)
    sudo = "" if user else "sudo "
    if source is None or source.path is None:
        report.next_steps.append(
            f"{editor} {layout.config}   # turn a channel on (`thalos-bot init` shows how)"
        )
    if missing:
        report.next_steps.append(f"{editor} {layout.secrets}   # {', '.join(missing)}")
    report.next_steps += [
        f"{' '.join(systemctl)} enable --now thalos-bot",
        f"{sudo}{program} status --config {layout.config}",
        f"{sudo}{program} logs -f --config {layout.config}",
    ]
    return report


def _systemctl(run: Run, words: list[str], report: Report) -> bool:
    """Run a systemctl command; the report says it ran, or that it failed and why."""
    result = run(words)
    shown = " ".join(words)
    if result.returncode == 0:
        report.done.append(f"ran {shown}")
        return True
    why = (result.stderr or result.stdout or "").strip().splitlines()
    reason = why[-1] if why else f"exit code {result.returncode}"
    report.warnings.append(f"{shown} failed: {reason}; run it yourself once that is mended")
    return False


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


def _trusted(path: Path) -> None:
    """Refuse ``path`` when someone else could have written it: owned by another user
    (root excepted) or writable by group or others, or a symlink."""
    info = path.lstat()
    owners = {os.geteuid(), 0}
    if stat.S_ISLNK(info.st_mode) or info.st_uid not in owners or info.st_mode & _OTHERS_WRITE:
        raise InstallError(
            f"{path} could have been written by another user (mode "
            f"{stat.S_IMODE(info.st_mode):04o}, owner uid {info.st_uid}, symlink: "
            f"{stat.S_ISLNK(info.st_mode)}), so its record of installed files is not trusted: "
            "nothing was removed; stop the service and remove the files by hand"
        )


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
    _trusted(config_dir)
    _trusted(manifest)
    ours = {
        str(config_dir / "bot.toml"),
        str(config_dir / SECRETS_NAME),
        str(_under(root, layout.unit)),
    }
    systemctl = ["systemctl", "--user"] if user else ["systemctl"]
    if root is None:
        _systemctl(run, [*systemctl, "disable", "--now", "thalos-bot"], report)
    for name, digest in written.items():
        path = Path(name)
        if name not in ours:
            report.kept.append(f"kept {path} (not a file install writes)")
            continue
        if not path.is_file() or path.is_symlink():
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
        _systemctl(run, [*systemctl, "daemon-reload"], report)
    state = "~/.local/state/thalos-bot" if user else "/var/lib/thalos-bot"
    report.kept.append(f"the state (database, logs) stays in {state}; remove it by hand")
    return report
