"""Accounts on the test Synapse, made through its shared-secret admin API.

`register()` is what `register_new_matrix_user` does: fetch a nonce from
`GET /_synapse/admin/v1/register`, then `POST` the account with an HMAC-SHA1 over
`nonce NUL username NUL password NUL admin|notadmin`, keyed with the server's
`registration_shared_secret`. The answer carries the account's first access token and
device id, so a test has a logged-in client at once, with no login round.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Any

import httpx2

from tests.matrix.synapse import SynapseServer


@dataclass(frozen=True)
class Account:
    user_id: str
    access_token: str = field(repr=False)  # out of the repr pytest prints on a failure
    device_id: str
    password: str = field(repr=False)


def registration_mac(secret: str, nonce: str, username: str, password: str, *, admin: bool) -> str:
    mac = hmac.new(secret.encode(), digestmod=hashlib.sha1)
    for part in (nonce, username, password):
        mac.update(part.encode())
        mac.update(b"\x00")
    mac.update(b"admin" if admin else b"notadmin")
    return mac.hexdigest()


async def register(
    server: SynapseServer, username: str, *, admin: bool = False, displayname: str | None = None
) -> Account:
    """A new account; a clash of usernames is the caller's bug (use `unique()`)."""
    password = secrets.token_urlsafe(16)
    url = f"{server.base_url}/_synapse/admin/v1/register"
    async with httpx2.AsyncClient(timeout=30.0) as client:
        nonce = (await client.get(url)).raise_for_status().json()["nonce"]
        body: dict[str, Any] = {
            "nonce": nonce,
            "username": username,
            "password": password,
            "admin": admin,
            "mac": registration_mac(
                server.registration_shared_secret, nonce, username, password, admin=admin
            ),
        }
        if displayname is not None:
            body["displayname"] = displayname
        answer = await client.post(url, json=body)
        if answer.status_code != 200:
            raise RuntimeError(f"registering {username!r}: {answer.status_code} {answer.text}")
        data = answer.json()
    return Account(data["user_id"], data["access_token"], data["device_id"], password)


def unique(prefix: str) -> str:
    """A username no other test in the session uses (they share one server)."""
    return f"{prefix}-{secrets.token_hex(4)}"


async def second_device(server: SynapseServer, account: Account) -> Account:
    """A second device of the same account (a password login)."""
    async with httpx2.AsyncClient(base_url=server.base_url, timeout=30.0) as http:
        answer = await http.post(
            "/_matrix/client/v3/login",
            json={
                "type": "m.login.password",
                "identifier": {"type": "m.id.user", "user": account.user_id},
                "password": account.password,
            },
        )
        data = answer.raise_for_status().json()
    return Account(account.user_id, data["access_token"], data["device_id"], account.password)
