"""Fuzzing what Discord's gateway hands the channel: dispatches of any shape (messages,
interactions, READY, RESUMED, reactions) are read or skipped, never the end of the
connection, and the channel still answers its owner afterwards; nothing a stranger
sends becomes a turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

from tests.discord.fuzz_gateway import GatewayFuzz, fuzzing
from tests.discord.gateway_events import dispatches, plain_message
from tests.hypothesis_budget import examples


def test_any_dispatch_is_read_or_skipped_and_the_channel_still_answers(tmp_path: Path) -> None:
    with fuzzing(tmp_path) as fuzz:

        @settings(
            max_examples=examples(150),
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],  # a broken channel fails every example
            suppress_health_check=list(HealthCheck),
        )
        @given(dispatches(fuzz.ids, fuzz.bot_user))
        def feed(event: tuple[str, Any]) -> None:
            name, data = event
            broke = fuzz.feed(name, data)
            assert broke is None, f"{name}: {broke}"

        feed()
        assert fuzz.still_answers()
        strangers = [r for r in fuzz.bot.provider.requests if "stranger" in repr(r.messages[-1:])]
        assert strangers == []


def owner_message(fuzz: GatewayFuzz, **fields: Any) -> dict[str, Any]:
    owner = fuzz.bot.world.owner
    base = plain_message(1300000000000000001, fuzz.ids.dm, owner, "owner", "hello")
    return base | fields


def test_shapes_found_by_the_fuzzer(tmp_path: Path) -> None:
    """Each of these ended the connection or raised in the channel before."""
    with fuzzing(tmp_path) as fuzz:
        owner = owner_message(fuzz)
        found: list[tuple[str, Any]] = [
            ("MESSAGE_REACTION_REMOVE_EMOJI", {"emoji": []}),  # the parser raised
            ("MESSAGE_CREATE", {**owner, "id": "1300000000000000002", "content": {}}),
            (
                "MESSAGE_CREATE",  # an author discord.py could not read: no ``author``
                {**owner, "id": "1300000000000000003", "author": {"id": str(fuzz.ids.owner)}},
            ),
            (
                "MESSAGE_CREATE",
                {
                    **owner,
                    "id": "1300000000000000004",
                    "attachments": [
                        {
                            "id": "1300000000000000005",
                            "filename": 7,
                            "size": {},
                            "url": [],
                            "proxy_url": [],
                        },
                        {
                            "id": "1300000000000000006",
                            "filename": "a.txt",
                            "size": "big",
                            "url": f"{fuzz.ids.files_url}1/2/a.txt",
                            "proxy_url": f"{fuzz.ids.files_url}1/2/a.txt",
                            "content_type": 5,
                        },
                    ],
                },
            ),
        ]
        for name, data in found:
            assert fuzz.feed(name, data) is None, name
        assert fuzz.still_answers()
