"""A daemon with the Telegram fake and the web channel, one ``[[hooks]]`` table for
GitHub and one generic; deliveries signed with a secret made at run time."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import time
import uuid
from pathlib import Path

from tests.daemon_config import telegram_daemon_config

USER = 5252
DATA = Path(__file__).parent / "data"
GITHUB_ENV = "TEST_GITHUB_HOOK_SECRET"
GENERIC_ENV = "TEST_CI_HOOK_SECRET"
PROMPT = "Summarise new issue #{issue.number} in {repository.full_name}: {issue.title}"


def new_secret() -> str:
    return secrets.token_hex(20)


def issue_payload() -> bytes:
    """The recorded ``issues`` event, as GitHub sends it (its bytes are what is signed)."""
    return (DATA / "github_issues_opened.json").read_bytes()


def hooks_config(telegram_url: str, port: int, *, telegram: str = "") -> str:
    return (
        telegram_daemon_config(
            telegram_url,
            USER,
            telegram=telegram,
            sections=f"""
[[hooks]]
name = "github"
path = "/hooks/github"
secret_env = "{GITHUB_ENV}"
scheme = "github"
principal = "owner"
deliver_to = "telegram:{USER}"
prompt = "{PROMPT}"

[[hooks]]
name = "ci"
path = "/hooks/ci"
secret_env = "{GENERIC_ENV}"
scheme = "generic"
principal = "owner"
deliver_to = "telegram:{USER}"
prompt = "The build {{build.id}} ended: {{build.status}}"
""",
        )
        + f'[channels.web]\nenabled = true\nlisten = "127.0.0.1:{port}"\n'
    )


def github_headers(secret: str, body: bytes, delivery: str | None = None) -> dict[str, str]:
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "content-type": "application/json",
        "user-agent": "GitHub-Hookshot/abc1234",
        "x-github-event": "issues",
        "x-github-delivery": delivery or str(uuid.uuid4()),
        "x-hub-signature-256": signature,
    }


def generic_headers(secret: str, body: bytes, at: float | None = None) -> dict[str, str]:
    stamp = str(int(time.time() if at is None else at))
    message = stamp.encode() + b"." + body
    signature = "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return {"content-type": "application/json", "x-timestamp": stamp, "x-signature": signature}


def build_body() -> bytes:
    return json.dumps({"build": {"id": "b-981", "status": "failed"}}).encode()


def hook_rows(state_dir: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(state_dir / "thalos.db") as db:
        rows = db.execute(
            "SELECT hook, state, attempts FROM hook_deliveries ORDER BY received_at"
        ).fetchall()
    return [(str(h), str(s), int(a)) for h, s, a in rows]
