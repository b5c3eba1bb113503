"""Turning encryption on when the homeserver refuses the device keys, without a
homeserver: nothing of the device's store is left open."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from thalos_bot_matrix import encryption
from thalos_bot_matrix.client import JSON, MatrixError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.session import Identity

pytestmark = pytest.mark.anyio

USER = "@bot:example.org"


class RefusingHomeserver:
    """Refuses the key upload as Synapse refuses a token it does not know."""

    async def call(self, method: str, path: str, *, body: JSON | None = None) -> JSON:
        raise MatrixError(401, "M_UNKNOWN_TOKEN")


async def test_a_failed_start_closes_the_devices_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[CryptoStore] = []
    load = CryptoStore.load

    def loaded(state_dir: Path, user_id: str, device_id: str) -> CryptoStore:
        opened.append(load(state_dir, user_id, device_id))
        return opened[-1]

    monkeypatch.setattr(CryptoStore, "load", loaded)
    config = MatrixConfig.model_validate(
        {"homeserver": "https://example.org", "user_id": USER, "encryption": True}
    )
    client: Any = RefusingHomeserver()
    host: Any = SimpleNamespace(state_dir=tmp_path, connection_rows=None)
    crypto = await encryption.started(client, config, host, Identity(USER, "DEVICE"))
    assert crypto is None
    [store] = opened
    assert store.db is None, "its SQLite connection closed"
