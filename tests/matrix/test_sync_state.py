"""The sync position on replicas, without a homeserver: the shared store's state is
this account's only when it says so."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from thalos_bot_matrix.state import SyncState, folder

pytestmark = pytest.mark.anyio

ME = "@bot:example.org"


class Shared:
    """A connection's shared state, as the store keeps it: one JSON object or none."""

    def __init__(self, state: dict[str, Any] | None) -> None:
        self.state = state

    async def load_state(self) -> dict[str, Any] | None:
        return None if self.state is None else dict(self.state)

    async def save_state(self, state: Mapping[str, Any]) -> bool:
        self.state = dict(state)
        return True


def _own_file(state_dir: Path) -> None:
    folder(state_dir).mkdir(parents=True)
    own = {"user_id": ME, "next_batch": "s_mine", "encrypted": ["!mine:x"], "told": []}
    (folder(state_dir) / "sync-bot_example.org.json").write_text(json.dumps(own))


async def test_another_accounts_shared_state_does_not_replace_this_ones_file(
    tmp_path: Path,
) -> None:
    _own_file(tmp_path)
    other = {"user_id": "@other:x", "next_batch": "s_theirs", "encrypted": ["!theirs:x"]}
    state = await SyncState.opened(tmp_path, ME, Shared(other))
    assert state.next_batch == "s_mine"
    assert state.encrypted == {"!mine:x"}


async def test_this_accounts_shared_state_wins_over_the_file(tmp_path: Path) -> None:
    _own_file(tmp_path)
    last_owner = {"user_id": ME, "next_batch": "s_later", "encrypted": ["!new:x"], "told": []}
    state = await SyncState.opened(tmp_path, ME, Shared(last_owner))
    assert state.next_batch == "s_later"
    assert state.encrypted == {"!new:x"}
    nothing = await SyncState.opened(tmp_path, ME, Shared(None))
    assert nothing.next_batch == "s_mine"
