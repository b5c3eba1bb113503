"""A real Synapse homeserver for the tests: config generated per run, one subprocess.

`tests/matrix/setup-synapse` installs Synapse into its own virtualenv (`.synapse/venv`);
`SynapseServer.start()` writes a fresh config into a temporary folder (SQLite database,
media store, signing key, log, all inside it), starts `synapse.app.homeserver` on
127.0.0.1 at a free port and waits until `/health` answers. Nothing in the config is
committed: the registration shared secret, macaroon key and form secret are generated
here at run time and live only in the temporary folder.

What the config turns off, so the server never reaches outside 127.0.0.1: federation
(no federation listener, an empty federation whitelist), TLS, URL previews, stats
reporting, trusted key servers, push, metrics, presence and open registration (accounts
are made only through the shared-secret admin API, see `accounts.py`).

Rate limits are raised to 1000/s (burst 1000) for every limiter a test could hit, so the
tests never wait on Synapse's pacing by accident. A test that wants real 429s lowers the
limit for one user through the admin API (`override_ratelimit`, see `accounts.py`), or
starts its own server with a low `rc_message` (`SynapseServer(rc_message=...)`).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
SYNAPSE_HOME = Path(os.environ.get("SYNAPSE_HOME", REPO / ".synapse"))
SYNAPSE_PYTHON = SYNAPSE_HOME / "venv" / "bin" / "python"
SYNAPSE_STAMP = SYNAPSE_HOME / "venv" / ".synapse-installed"
SERVER_NAME = "localhost"
# The bound on start-up. Synapse starts in a few seconds here; the bound is for a machine
# under heavy load and only turns a hang into a failure with the log attached.
START_TIMEOUT = 90.0  # under pytest-timeout's 120 s, so the log tail is what reports a hang
RELAXED = {"per_second": 1000, "burst_count": 1000}


class SynapseNotInstalledError(RuntimeError):
    """`tests/matrix/setup-synapse` has not been run on this machine."""


class SynapseStartError(RuntimeError):
    """Synapse exited or did not become healthy; the message carries its log tail."""


def installed() -> bool:
    return SYNAPSE_PYTHON.exists() and SYNAPSE_STAMP.exists()


# Run in Synapse's interpreter before Synapse itself: on Linux, ask for SIGTERM when the
# test process dies (kept across exec), so a killed pytest (timeout, SIGKILL) leaves no
# homeserver behind; then exec Synapse with the arguments that follow.
_LAUNCHER = """
import ctypes, os, signal, sys
if sys.platform == "linux":
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != int(sys.argv[1]):
        sys.exit("the test process is gone")
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def _signing_key() -> str:
    # Synapse's signing-key file format: "<algorithm> <version> <unpadded base64 seed>".
    seed = base64.b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    return f"ed25519 a_{secrets.token_hex(2)} {seed}\n"


def _rate_limits(rc_message: dict[str, float]) -> dict[str, Any]:
    return {
        "rc_message": rc_message,
        "rc_registration": RELAXED,
        "rc_registration_token_validity": RELAXED,
        "rc_login": {"address": RELAXED, "account": RELAXED, "failed_attempts": RELAXED},
        "rc_joins": {"local": RELAXED, "remote": RELAXED},
        "rc_joins_per_room": RELAXED,
        "rc_invites": {"per_room": RELAXED, "per_user": RELAXED, "per_issuer": RELAXED},
        "rc_3pid_validation": RELAXED,
        "rc_admin_redaction": RELAXED,
        "rc_room_creation": RELAXED,
        "rc_presence": {"per_user": RELAXED},
        "rc_delayed_event_mgmt": RELAXED,
        "rc_reports": RELAXED,
        "rc_media_create": RELAXED,
    }


def homeserver_config(
    folder: Path, port: int, secret: str, rc_message: dict[str, float], *, push: bool = False
) -> str:
    """The homeserver.yaml text (JSON, which YAML reads as it is). ``push``: evaluate
    push rules (who an event notifies or highlights); off, Synapse skips that work."""
    config: dict[str, Any] = {
        "server_name": SERVER_NAME,
        "public_baseurl": f"http://127.0.0.1:{port}/",
        "pid_file": str(folder / "homeserver.pid"),
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "database": {"name": "sqlite3", "args": {"database": str(folder / "homeserver.db")}},
        "log_config": str(folder / "log.config"),
        "media_store_path": str(folder / "media_store"),
        "signing_key_path": str(folder / "signing.key"),
        "registration_shared_secret": secret,
        # bcrypt's fewest rounds: each test registers and logs in its own accounts, and
        # the default 12 makes every password hash cost a quarter second or more.
        "bcrypt_rounds": 4,
        "macaroon_secret_key": secrets.token_urlsafe(32),
        "form_secret": secrets.token_urlsafe(32),
        "enable_registration": False,
        "report_stats": False,
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "federation_domain_whitelist": [],
        "allow_public_rooms_over_federation": False,
        "url_preview_enabled": False,
        "push": {"enabled": push},
        "enable_metrics": False,
        "presence": {"enabled": False},
        "serve_server_wellknown": False,
        **_rate_limits(rc_message),
    }
    return json.dumps(config, indent=2)


def log_config(folder: Path) -> str:
    config = {
        "version": 1,
        "formatters": {"plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}},
        "handlers": {
            "file": {
                "class": "logging.FileHandler",
                "formatter": "plain",
                "filename": str(folder / "homeserver.log"),
                "encoding": "utf8",
            }
        },
        "loggers": {"synapse.storage.SQL": {"level": "WARNING"}},
        "root": {"level": "INFO", "handlers": ["file"]},
        "disable_existing_loggers": False,
    }
    return json.dumps(config, indent=2)


@dataclass
class SynapseServer:
    """One Synapse process over one temporary folder. `start()`, then `stop()`."""

    folder: Path
    rc_message: dict[str, float] = field(default_factory=lambda: dict(RELAXED))
    push: bool = False
    port: int = 0
    # Kept out of the repr, which pytest prints in a failing test's traceback.
    registration_shared_secret: str = field(default="", repr=False)
    started_in: float = 0.0
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def server_name(self) -> str:
        return SERVER_NAME

    def log_tail(self, lines: int = 60) -> str:
        parts = []
        for name in ("stdio.log", "homeserver.log"):
            path = self.folder / name
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {name} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(parts) or "(Synapse wrote no log)"

    def start(self) -> None:
        if not installed():
            raise SynapseNotInstalledError(
                f"Synapse is not installed in {SYNAPSE_HOME}: run `bash tests/matrix/setup-synapse`"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "media_store").mkdir(exist_ok=True)
        self.port = self.port or free_port()
        self.registration_shared_secret = secrets.token_urlsafe(32)
        config = self.folder / "homeserver.yaml"
        config.write_text(
            homeserver_config(
                self.folder,
                self.port,
                self.registration_shared_secret,
                self.rc_message,
                push=self.push,
            )
        )
        config.chmod(0o600)
        (self.folder / "log.config").write_text(log_config(self.folder))
        key = self.folder / "signing.key"
        key.write_text(_signing_key())
        key.chmod(0o600)
        began = time.monotonic()
        with (self.folder / "stdio.log").open("wb") as stdio:
            self._process = subprocess.Popen(
                [
                    str(SYNAPSE_PYTHON),
                    "-c",
                    _LAUNCHER,
                    str(os.getpid()),
                    "-m",
                    "synapse.app.homeserver",
                    "--config-path",
                    str(config),
                ],
                cwd=self.folder,
                stdin=subprocess.DEVNULL,
                stdout=stdio,
                stderr=subprocess.STDOUT,
                env={
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "LANG": "C.UTF-8",
                    # Synapse names its version after `git describe` of its own folder,
                    # which lies inside this checkout: stop git looking up that far.
                    "GIT_CEILING_DIRECTORIES": str(SYNAPSE_HOME),
                },
            )
        try:
            self._wait_healthy(began)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began

    def _wait_healthy(self, began: float) -> None:
        # A subprocess gives no readiness event to wait on, so this polls /health, bounded.
        assert self._process is not None
        with httpx2.Client(timeout=5.0) as client:
            while time.monotonic() - began < START_TIMEOUT:
                code = self._process.poll()
                if code is not None:
                    raise SynapseStartError(
                        f"Synapse exited with code {code} before it was healthy\n" + self.log_tail()
                    )
                # Its own log line first: a /health answer alone could come from another
                # server that took the port between free_port() and Synapse's bind.
                if self._listening():
                    try:
                        if client.get(f"{self.base_url}/health").text == "OK":
                            return
                    except httpx2.TransportError:
                        pass
                time.sleep(0.1)
        raise SynapseStartError(
            f"Synapse was not healthy after {START_TIMEOUT:.0f}s\n" + self.log_tail()
        )

    def _listening(self) -> bool:
        log = self.folder / "homeserver.log"
        line = f"Synapse now listening on TCP port {self.port}"
        return log.exists() and line in log.read_text(errors="replace")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def main() -> None:
    """Start one server and print how long it took (`python -m tests.matrix.synapse`)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="synapse-") as folder:
        server = SynapseServer(Path(folder))
        server.start()
        try:
            sys.stdout.write(f"synapse healthy at {server.base_url} in {server.started_in:.2f}s\n")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
