"""A throwaway PostgreSQL server for the tests: Debian's binaries, a temporary cluster.

``initdb`` refuses to run as root, so when the tests run as root the cluster belongs to
the ``postgres`` user (commands run through ``runuser``/``su``). The server listens only
on a Unix socket inside the cluster's folder and on 127.0.0.1 at a free port, with
durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``): it is thrown
away at the end of the session.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.ports import free_port

PREFERRED_BIN_DIR = Path("/usr/lib/postgresql/15/bin")
SUPERUSER = "thalos"
PASSWORD_ROLE = "password_logins"
"""Members of this role must give their password over TCP."""
START_TIMEOUT_S = 60


class PostgresUnavailableError(Exception):
    """The server cannot be started here, for the reason given."""


@dataclass(frozen=True, slots=True)
class PostgresServer:
    root: Path
    bin_dir: Path
    port: int
    user: str
    run_as: str | None
    start_seconds: float
    """How long ``initdb`` plus ``pg_ctl start`` took."""

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def socket_url(self, database: str) -> str:
        return f"postgresql://{self.user}@/{database}?host={self.socket_dir}&port={self.port}"

    def psql(self, database: str, sql: str) -> str:
        return _run(
            self.run_as,
            [
                str(self.bin_dir / "psql"),
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                database,
                "-c",
                sql,
            ],
        )

    def create_database(self, name: str) -> str:
        """Create database ``name``; return its URL (over TCP on 127.0.0.1)."""
        self.psql("postgres", f'CREATE DATABASE "{name}"')
        self.psql("postgres", f"CREATE ROLE {PASSWORD_ROLE} NOLOGIN")
        return self.url(name)

    def copy_database(self, template: str, name: str) -> None:
        """Create database ``name`` as a copy of ``template`` (which nobody may be
        connected to), file by file: a few tens of milliseconds for a small one."""
        self.psql("postgres", f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')

    def drop_database(self, name: str) -> None:
        """Drop database ``name``, closing whatever connections are left on it."""
        self.psql("postgres", f'DROP DATABASE "{name}" WITH (FORCE)')

    def restart(self, mode: str = "fast") -> None:
        """Restart the server (``fast``: connections closed cleanly; ``immediate``: as
        after a crash, recovered from the WAL) on the same port and options."""
        data = self.root / "data"
        _run(
            self.run_as,
            [
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(self.root / "server.log"),  # else the server keeps the pipe open
                "-m",
                mode,
                "-w",
                "-t",
                "60",
                "restart",
            ],
        )

    def stop(self) -> None:
        """Stop the server (``-m fast``: connections are closed, nothing is kept); if
        pg_ctl fails, the postmaster is killed, so no server outlives the tests."""
        data = self.root / "data"
        try:
            _run(self.run_as, [str(self.bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"])
        except PostgresUnavailableError:
            pid_file = data / "postmaster.pid"
            if pid_file.exists():
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)
            raise
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def find_bin_dir() -> Path | None:
    """Debian's PostgreSQL 15, else the newest other version installed."""
    others = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for candidate in (PREFERRED_BIN_DIR, *others):
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    return None


def start_server() -> PostgresServer:
    """Initialise and start a cluster; raise :class:`PostgresUnavailableError` if not."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise PostgresUnavailableError("no PostgreSQL binaries under /usr/lib/postgresql")
    run_as = _unprivileged_user()
    # /tmp, not $TMPDIR: the postgres user must reach the folder, and a socket path
    # must stay under 108 bytes.
    base = "/tmp" if os.access("/tmp", os.W_OK | os.X_OK) else None
    root = Path(tempfile.mkdtemp(prefix="thalos-pg-", dir=base))
    began = time.monotonic()
    try:
        if run_as is not None:
            entry = pwd.getpwnam(run_as)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        root.chmod(0o700)
        _run(run_as, ["mkdir", "-m", "700", str(root / "socket")])
        _run(
            run_as,
            [
                str(bin_dir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )
        # Password logins over TCP for members of PASSWORD_ROLE, as a production
        # server has them; everything else is trusted (the cluster is private to us).
        hba = root / "data" / "pg_hba.conf"
        hba.write_text(
            f"host all +{PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n" + hba.read_text(),
            encoding="utf-8",
        )
        port = free_port()
        options = " ".join(
            [
                f"-p {port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={root / 'socket'}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=60",
                "-c shared_buffers=16MB",
            ]
        )
        _run(
            run_as,
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(root / "data"),
                "-l",
                str(root / "server.log"),
                "-o",
                options,
                "-t",
                str(START_TIMEOUT_S),
                "-w",
                "start",
            ],
        )
    except PostgresUnavailableError as exc:
        log = root / "server.log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailableError(f"{exc}\n{tail}".rstrip()) from None
    return PostgresServer(root, bin_dir, port, SUPERUSER, run_as, time.monotonic() - began)


def _unprivileged_user() -> str | None:
    """Who runs the server: ourselves unless we are root, then ``postgres``."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailableError(
            "running as root and there is no 'postgres' user to run initdb as"
        ) from None
    return "postgres"


def _run(run_as: str | None, argv: Sequence[str]) -> str:
    command = list(argv)
    if run_as is not None:
        runuser = shutil.which("runuser")
        command = (
            [runuser, "-u", run_as, "--", *command]
            if runuser
            else ["su", run_as, "-s", "/bin/sh", "-c", " ".join(_quote(a) for a in command)]
        )
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PostgresUnavailableError(f"{argv[0]}: {exc}") from None
    if done.returncode != 0:
        raise PostgresUnavailableError(
            f"{Path(argv[0]).name} exited {done.returncode}: {done.stderr.strip()[-1500:]}"
        )
    return done.stdout


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"
