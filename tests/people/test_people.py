"""People: who each sender is, the roles a principal holds now, and the configuration's
refusals (an identity claimed by two people)."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.channels.people import Seats
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.config.models import Settings
from thalos_bot.config.people import PersonSettings
from thalos_bot.domain.people import People, RoleBook
from thalos_bot.domain.security import SecurityContext

OWNER = SecurityContext.of("owner", ["admin"])


def household() -> People:
    return Settings(
        people=[
            PersonSettings(
                id="ana",
                name="Ana",
                roles=["admin"],
                identities={"telegram": [4242], "discord": [803511102246789]},
                terminal=True,
            ),
            PersonSettings(id="ben", identities={"telegram": [5151], "web": ["ben"]}),
        ]
    ).directory()


def test_a_listed_sender_is_their_person_on_every_transport() -> None:
    people = household()
    telegram = Seats("telegram", people, OWNER, "9999")
    discord = Seats("discord", people, OWNER, None)
    assert telegram.context(4242) == SecurityContext.of("ana", ["admin"])
    assert discord.context("803511102246789") == SecurityContext.of("ana", ["admin"])
    assert telegram.context(5151) == SecurityContext.of("ben")
    sender = telegram.sender(5151, "Ben")
    assert (sender.context.id, sender.display, sender.user) == ("ben", "Ben", "5151")
    assert Seats("console", people, OWNER, "console").context("console").id == "ana"


def test_an_unlisted_sender_is_never_someone_else() -> None:
    seats = Seats("telegram", People(), OWNER, "4242")
    assert seats.context(4242) == OWNER  # the first allowed user keeps principal_id
    stranger = seats.context(7777)
    assert stranger == SecurityContext.of("telegram:7777")  # their own, with no roles
    assert seats.context(7777) != seats.context(8888)
    web = Seats("web", People(), SecurityContext.of("owner", ["admin"]), "owner", prefixed=False)
    assert web.context("guest") == SecurityContext.of("guest")


def test_roles_are_read_as_the_configuration_says_now() -> None:
    book = RoleBook(
        household(),
        [("owner", ["admin", "files"]), ("owner", ["admin"]), ("family", [])],
        ["telegram:7777", "guest"],
    )
    assert book.roles("ana") == frozenset({"admin"})
    assert book.roles("owner") == frozenset({"admin"})  # only what every section gives it
    assert book.roles("family") == frozenset()
    assert book.roles("telegram:7777") == frozenset()  # an allowed user's own person
    assert book.roles("guest") == frozenset()  # another web login
    assert book.roles("carol") is None  # no longer anyone
    assert book.roles("telegram:8888") is None  # no longer allowed


def test_an_identity_claimed_by_two_people_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        '[[people]]\nid = "ana"\nidentities = { telegram = [4242] }\n'
        '[[people]]\nid = "ben"\nidentities = { telegram = [5151, 4242] }\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    message = str(raised.value)
    assert "bot.toml" in message
    assert "people[1].identities.telegram" in message
    assert "'4242' is already people[0]'s (ana)" in message


@pytest.mark.parametrize(
    ("body", "wanted"),
    [
        ('[[people]]\nid = "ana"\n[[people]]\nid = "ana"\n', "people[1].id"),
        (
            '[[people]]\nid = "ana"\nterminal = true\n[[people]]\nid = "ben"\nterminal = true\n',
            "people[1].terminal",
        ),
        ('[[people]]\nid = "ana"\nidentities = { "tele gram" = [1] }\n', "not a transport"),
        ('[[people]]\nid = "ana"\nidentities = { telegram = [" "] }\n', "is not an id"),
    ],
)
def test_other_clashes_name_the_key(tmp_path: Path, body: str, wanted: str) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    assert wanted in str(raised.value)
