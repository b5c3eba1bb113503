"""Fixtures for the email tests: real Dovecot and Postfix, started once per test
session (see servers.py), and a world of mailboxes over them per test."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.email.servers import MailServers, MailServersUnavailableError, start, without_idle
from tests.email.world import World
from thalos_bot_email import PASSWORD_ENV


@pytest.fixture(scope="session")
def mail_servers() -> Iterator[MailServers]:
    # Not under pytest's folders (0700): Postfix and Dovecot's own users must reach it.
    folder = Path(tempfile.mkdtemp(prefix="thalos-mail-"))
    folder.chmod(0o755)
    try:
        servers = start(folder)
    except MailServersUnavailableError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Dovecot and Postfix could not be started under CI: {exc}")
        pytest.skip(f"Dovecot and Postfix could not be started: {exc}")
    try:
        yield servers
    finally:
        servers.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def servers_without_idle(mail_servers: MailServers) -> MailServers:
    """The same servers and mailboxes, read through a Dovecot that does not offer IDLE."""
    return without_idle(mail_servers)


@pytest.fixture
def world(mail_servers: MailServers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    world = World.of(mail_servers, tmp_path)
    monkeypatch.setenv(PASSWORD_ENV, world.password)
    return world
