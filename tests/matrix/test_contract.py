"""Matrix passes the channel kit's contract suite against the real Synapse.

The bot reaches Synapse through a loopback proxy (`proxy.py`) only so that a send can be
made "in doubt" (carried out, its answer lost): Synapse never does that on its own. A
flood-control wait is Synapse's own 429: the bot's message limit is lowered to one a
second through the admin API and the one action spent, so its next send is refused with
M_LIMIT_EXCEEDED and a real retry_after_ms.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.channels.contract.daemon import PNG, running
from tests.channels.contract.process import daemon, write_config
from tests.channels.contract.suite import ContractSuite, texts
from tests.channels.contract.transport import Choice, Shown, Style, Where, Who
from tests.matrix.accounts import Account, register, unique
from tests.matrix.bot import make_config
from tests.matrix.human import Human
from tests.matrix.proxy import Proxy, Request, any_send
from tests.matrix.synapse import SynapseServer
from thalos_bot.channels.registry import ChannelPlugin
from thalos_bot_matrix import TOKEN_ENV
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.manifest import manifest as plugin
from thalos_bot_matrix.render import MESSAGE_UNITS

pytestmark = pytest.mark.slow

NAME = "Thalos"
_TAGS: dict[str, Style] = {
    "strong": "bold",
    "b": "bold",
    "em": "italic",
    "i": "italic",
    "del": "strike",
    "s": "strike",
    "code": "code",
    "pre": "pre",
    "a": "link",
}
_KEYS: dict[Choice, str] = {"once": "✅", "session": "🔁", "deny": "❌"}


class _Visible(HTMLParser):
    """What a client shows of ``formatted_body``: its text, and the styles it uses."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.styles: set[Style] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _TAGS:
            self.styles.add(_TAGS[tag])
        if tag in {"p", "li", "br", "pre", "h1", "h2", "h3", "blockquote"} and self.text:
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def visible(content: dict[str, Any]) -> Shown:
    if content.get("msgtype") == "m.image":
        return Shown(str(content.get("body", "")), image=True)
    if content.get("format") != "org.matrix.custom.html":
        return Shown(str(content.get("body", "")))
    parser = _Visible()
    parser.feed(str(content["formatted_body"]))
    text = html.unescape("".join(parser.text)).strip()
    return Shown(text, frozenset(parser.styles))


class MatrixContract:
    plugin: ChannelPlugin = plugin
    message_limit = MESSAGE_UNITS

    def __init__(
        self,
        synapse: SynapseServer,
        proxy: Proxy,
        accounts: dict[str, Account],
        humans: dict[str, Human],
        rooms: dict[str, str],
    ) -> None:
        self.synapse = synapse
        self.proxy = proxy
        self.accounts = accounts
        self.humans = humans
        self.rooms = rooms
        self.bot = accounts["bot"].user_id

    def config(self) -> MatrixConfig:
        return make_config(
            self.synapse,
            self.accounts["bot"],
            [self.accounts["user"].user_id],
            homeserver=self.proxy.base_url,
            rooms=[self.rooms["group"]],
        )

    def environment(self) -> dict[str, str]:
        return {TOKEN_ENV: self.accounts["bot"].access_token}

    async def started(self) -> None:
        user = self.humans["user"]
        await user.until(
            lambda h: (
                h.joined(self.rooms["dm"], self.bot) and h.joined(self.rooms["group"], self.bot)
            )
        )

    def _room(self, who: Who, where: Where) -> str:
        if where == "group":
            return self.rooms["group"]
        return self.rooms["dm"] if who == "user" else self.rooms["stranger_dm"]

    async def say(
        self, text: str, *, who: Who = "user", where: Where = "dm", mention: bool = False
    ) -> None:
        human = self.humans[who]
        room = self._room(who, where)
        if mention:
            await human.say(room, f"{NAME}: {text}", mentions=[self.bot])
        else:
            await human.say(room, text, mentions=[])

    async def send_image(self, data: bytes, caption: str, *, who: Who = "user") -> None:
        human = self.humans[who]
        uri = await human.upload(data, "image/png", "image.png")
        content = {
            "msgtype": "m.image",
            "body": caption,
            "filename": "image.png",
            "url": uri,
            "info": {"mimetype": "image/png", "size": len(data)},
        }
        await human.send(self._room(who, "dm"), content)

    async def send_voice(self, data: bytes, seconds: float) -> None:
        human = self.humans["user"]
        uri = await human.upload(data, "audio/ogg", "Voice message.ogg")
        content = {
            "msgtype": "m.audio",
            "body": "Voice message.ogg",
            "url": uri,
            "info": {"mimetype": "audio/ogg", "size": len(data), "duration": int(seconds * 1000)},
            "org.matrix.msc3245.voice": {},
        }
        await human.send(self._room("user", "dm"), content)

    def voices(self) -> list[float | None]:
        human = self.humans["user"]
        human.catch_up()
        return [
            m.content["info"]["duration"] / 1000
            for m in human.shown(self._room("user", "dm"), self.bot)
            if m.content.get("msgtype") == "m.audio" and "org.matrix.msc3245.voice" in m.content
        ]

    def shown(self, *, who: Who = "user", where: Where = "dm") -> list[Shown]:
        human = self.humans["user" if where == "group" else who]
        human.catch_up()
        return [visible(m.content) for m in human.shown(self._room(who, where), self.bot)]

    async def wait_for(self, predicate: object, timeout: float = 15.0) -> None:
        assert callable(predicate)
        check: Callable[[], object] = predicate
        # Synapse under the load of parallel work: the bound is generous; every wait is
        # a /sync long-poll that returns as soon as something happens.
        with anyio.fail_after(max(timeout, 60.0)):
            while not check():
                await self.humans["user"].sync_once()

    def flood_wait(self, seconds: float) -> None:
        admin = self.accounts["admin"]
        bot = self.accounts["bot"]
        with httpx2.Client(base_url=self.synapse.base_url, timeout=30.0) as http:
            answer = http.post(
                f"/_synapse/admin/v1/users/{bot.user_id}/override_ratelimit",
                headers={"Authorization": f"Bearer {admin.access_token}"},
                json={"messages_per_second": 1, "burst_count": 1},
            )
            assert answer.status_code == 200, answer.text
            # Spend the one action (a room of the bot's own, where nobody looks), so
            # the bot's next send meets a real 429.
            http.post(
                "/_matrix/client/v3/createRoom",
                headers={"Authorization": f"Bearer {bot.access_token}"},
                json={"preset": "private_chat"},
            )

    def sent_during_wait(self) -> int:
        return self.proxy.violations

    def flooded(self) -> bool:
        return self.proxy.limited > 0

    def refuse_next_send(self) -> None:
        self.proxy.refuse.append(any_send)

    def in_doubt(self) -> None:
        self.proxy.drop.append(any_send)

    async def answer_approval(self, choice: Choice, *, who: Who = "user") -> None:
        question = self._question()
        assert question is not None, "no question is open"
        await self.humans[who].react(self.rooms["dm"], question, _KEYS[choice])

    def asked(self) -> bool:
        return self._question() is not None

    def _question(self) -> str | None:
        for message in self.humans["user"].shown(self.rooms["dm"], self.bot):
            if message.body.startswith("🔐 Allow"):
                return message.event_id
        return None


@pytest.fixture
async def matrix(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MatrixContract]:
    accounts = {
        "admin": await register(synapse, unique("admin"), admin=True),
        "bot": await register(synapse, unique("bot"), displayname=NAME),
        "user": await register(synapse, unique("user")),
        "stranger": await register(synapse, unique("stranger")),
    }
    monkeypatch.setenv(TOKEN_ENV, accounts["bot"].access_token)
    bot = accounts["bot"].user_id
    proxy = Proxy(synapse.base_url)
    try:
        async with (
            anyio.create_task_group() as group,
            Human(synapse, accounts["user"]) as user,
            Human(synapse, accounts["stranger"]) as stranger,
        ):
            await proxy.run(group)
            dm = await user.direct_chat(bot)
            room = await user.group([bot, accounts["stranger"].user_id])
            await stranger.join(room)
            # In the user's DM too, so that the stranger can try to answer a question.
            await user.call(
                "POST", f"/_matrix/client/v3/rooms/{dm}/invite", {"user_id": stranger.user_id}
            )
            await stranger.join(dm)
            stranger_dm = await stranger.direct_chat(bot)
            rooms = {"dm": dm, "group": room, "stranger_dm": stranger_dm}
            try:
                yield MatrixContract(
                    synapse, proxy, accounts, {"user": user, "stranger": stranger}, rooms
                )
            finally:
                group.cancel_scope.cancel()
    finally:
        await proxy.aclose()


class TestMatrixContract(ContractSuite):
    @pytest.fixture
    def transport(self, matrix: MatrixContract) -> MatrixContract:
        return matrix


def _download(request: Request) -> bool:
    return request.method == "GET" and "/media/download/" in request.path


async def _text_answered_image_held(transport: MatrixContract) -> None:
    """The batch's text answered while its image's download is held."""
    await transport.wait_for(lambda: texts(transport.shown()) == ["You said: while down"])
    with anyio.fail_after(60):
        while not transport.proxy.held:
            await transport.proxy.changed.wait()


async def _image_and_next_answered(transport: MatrixContract) -> None:
    await transport.wait_for(lambda: "You said: and this?" in texts(transport.shown()))
    await transport.say("after")
    await transport.wait_for(lambda: "You said: after" in texts(transport.shown()))


@pytest.mark.anyio
async def test_a_stop_in_the_middle_of_a_batch_answers_nothing_twice(
    matrix: MatrixContract, tmp_path: Path
) -> None:
    """A ``/sync`` batch is handed over event by event, and its position written once the
    whole batch is (its files fetched): a stop in between must still leave the next start
    knowing what was handed over."""
    transport = matrix
    async with running(transport, tmp_path) as first:
        pass  # the rooms learnt, the position kept
    # Said while the bot is down: one batch at the next start, a text then an image
    # whose download never ends while that process runs.
    await transport.say("while down")
    await transport.send_image(PNG, "and this?")
    transport.proxy.holding = _download
    async with running(transport, tmp_path, stores=first.stores):
        await _text_answered_image_held(transport)
    transport.proxy.holding = None
    async with running(transport, tmp_path, stores=first.stores) as third:
        await _image_and_next_answered(transport)
    assert texts(transport.shown()) == [
        "You said: while down",
        "You said: and this?",
        "You said: after",
    ]
    assert len(third.provider.requests) == 2, "the text of the cut batch ran once"


@pytest.mark.anyio
async def test_a_kill_in_the_middle_of_a_batch_answers_nothing_twice(
    matrix: MatrixContract, tmp_path: Path
) -> None:
    """The real daemon, killed (SIGKILL) once the text of a batch is answered while the
    batch's image is still being fetched: the next start gets the batch again, and
    answers only the image."""
    transport = matrix
    folder = tmp_path / "daemon"
    write_config(transport, folder)
    async with daemon(transport, folder):
        await transport.started()  # the rooms learnt, the position kept (then SIGTERM)
    await transport.say("while down")
    await transport.send_image(PNG, "and this?")
    transport.proxy.holding = _download
    async with daemon(transport, folder) as second:
        await _text_answered_image_held(transport)
        await second.kill()
    transport.proxy.holding = None
    async with daemon(transport, folder):
        await _image_and_next_answered(transport)
    assert texts(transport.shown()) == [
        "You said: while down",
        "You said: and this?",
        "You said: after",
    ]
