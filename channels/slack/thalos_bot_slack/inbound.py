"""Which Slack events become messages for the pump, in which conversation, and with
which text, each only once (the :class:`Ledger`).

- A direct message from an allowed user is a turn in the DM's conversation (with
  ``assistant_threads``, in the conversation of its thread).
- In a listed channel, a mention of the bot by an allowed user starts a conversation:
  the thread under that message (or the thread it was said in). Later messages of an
  allowed user in that thread need no mention.
- Everything else gets nothing: strangers, unlisted channels, other bots, the bot's
  own posts, edits and deletions (``message_changed``, ``message_deleted``).

Slack escapes ``&``, ``<`` and ``>`` and writes its own markup in angle brackets: a user
``<@U123>``, a channel ``<#C123|general>``, a link ``<https://x|label>``, a special
mention ``<!here>``. The bot's own mention is dropped (it only addresses the bot); the
rest become plain words. Commands typed as text (``!new``, or ``/new`` when the client
let it through) become the pump's ``/new``.

A shared file is fetched for the kit's intake from its ``url_private_download`` with the
bot token (``files:read``), and only from Slack's own file host (``files.slack.com``
over https, or the host of ``base_url`` when one is set): a file object naming another
host (an external file kept on Google Drive, or a forged event) is not fetched, and the
person is told. No redirect is followed (the token would go with it). Slack answers a
download without a valid token with its HTML sign-in page and status 200, so a
``text/html`` answer to a file that is not HTML counts as refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import urlsplit

import structlog

from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.intake.downloads import DownloadError, FileDownloads
from thalos_bot.channels.intake.files import FetchLimit, RemoteFile
from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.notices import COMMAND_NAMES
from thalos_bot.channels.waiting import Waiting
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.config import SlackConfig

log = structlog.get_logger(__name__)

KEEP_MESSAGES = 5_000
KEEP_THREADS = 2_000
TAKEN_SUBTYPES = (None, "file_share", "thread_broadcast")
_MARKUP = re.compile(r"<([^<>]+)>")
_TYPED_COMMAND = re.compile(r"^\s*[!/]([A-Za-z]+)(?=\s|$)")


class Ledger:
    """What the channel must remember across a restart: the messages it has taken, the
    events acknowledged that the pump has not taken yet (the kit's
    :class:`~thalos_bot.channels.waiting.Waiting`: Slack never sends them again), and the
    threads that are conversations.

    Slack delivers an event again when its acknowledgement did not arrive in 3 seconds or
    the socket dropped first (``retry_attempt`` 1, 2, 3), and a mention in a channel comes
    twice (a ``message`` and an ``app_mention`` event, with different event ids). So a
    message is known by its channel and ``ts``, which every copy shares: the first copy
    starts a turn, every later one is dropped. The keys (the newest few thousand) and the
    threads are kept (:class:`~thalos_bot.channels.kept.KeptState`: a small JSON file in
    the state directory and, on replicas, beside the connection's lease, so the next
    owner knows the threads begun with the last one), written before the event is
    acknowledged, so a redelivery after a restart is recognised too."""

    def __init__(self, kept: KeptState | None) -> None:
        self.kept = kept
        self._seen, self._threads = Seen(KEEP_MESSAGES), Seen(KEEP_THREADS)
        self.waiting = Waiting("slack", self.save)

    async def load(self) -> None:
        data = {} if self.kept is None else await self.kept.load()
        try:
            seen = Seen(KEEP_MESSAGES, map(str, data.get("seen", [])))
            threads = Seen(KEEP_THREADS, map(str, data.get("threads", [])))
        except TypeError as exc:
            log.warning("slack_ledger_unreadable", error=type(exc).__name__)
            return
        self._seen, self._threads = seen, threads
        self.waiting.load(data.get("waiting"))

    def is_thread(self, channel: str, thread_ts: str) -> bool:
        return f"{channel}:{thread_ts}" in self._threads

    def take(self, channel: str, ts: str, *, thread: str | None = None) -> bool:
        """Note the message (and the thread it starts); False when it was taken before."""
        if not self._seen.first_time(f"{channel}:{ts}"):
            return False
        if thread is not None:
            self._threads.first_time(f"{channel}:{thread}")
        return True

    async def save(self) -> None:
        if self.kept is None:
            return
        waiting = self.waiting.dump()
        data = {"seen": list(self._seen), "threads": list(self._threads), "waiting": waiting}
        try:
            await self.kept.save(data)
        except OSError as exc:
            log.warning("slack_ledger_not_written", error=type(exc).__name__)


@dataclass(frozen=True, slots=True)
class Admitted:
    place: Place
    user: str
    team: str
    text: str
    ts: str
    files: tuple[RemoteFile, ...] = ()
    starts_thread: bool = False


class Admission:
    def __init__(self, config: SlackConfig, ledger: Ledger, bot_user: str) -> None:
        self.config = config
        self.allowed = frozenset(config.allowed_users)
        self.ledger = ledger
        self.bot_user = bot_user

    def judge(self, event: Mapping[str, Any]) -> Admitted | None:
        """The message ``event`` carries, if it is one the bot answers (not yet taken:
        see :meth:`Ledger.take`)."""
        kind, subtype = event.get("type"), event.get("subtype")
        if kind not in ("message", "app_mention") or subtype not in TAKEN_SUBTYPES:
            return None
        user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
        if event.get("bot_id") or not isinstance(user, str) or user not in self.allowed:
            return None
        if not isinstance(channel, str) or not isinstance(ts, str) or user == self.bot_user:
            return None
        thread = event.get("thread_ts") if isinstance(event.get("thread_ts"), str) else None
        raw, root = str(event.get("text") or ""), thread or ts
        if channel.startswith("D") or event.get("channel_type") == "im":
            threads = self.config.assistant_threads
            place, starts = Place(channel, root if threads else None), threads and root == ts
        elif channel not in self.config.channels:
            return None
        elif thread is not None and self.ledger.is_thread(channel, thread):
            place, starts = Place(channel, thread), False
        elif kind == "app_mention" or f"<@{self.bot_user}>" in raw:
            place, starts = Place(channel, root), True
        else:
            return None
        team, text = str(event.get("team") or ""), plain(raw, self.bot_user)
        return Admitted(place, user, team, text, ts, _files(event.get("files")), starts)


def _markup(match: re.Match[str]) -> str:
    target, _, label = match[1].partition("|")
    if target.startswith(("@", "#")):
        return f"{target[0]}{label or target[1:]}"
    if target.startswith("!"):
        return f"@{label or target[1:].split('^')[0]}"
    return f"{label} ({target})" if label and label != target else target


def plain(text: str, bot_user: str) -> str:
    """The text as plain words; ``!new 2`` → ``/new 2`` when it names one of the six
    commands."""
    if bot_user:
        text = text.replace(f"<@{bot_user}>", "")
    text = unescape(_MARKUP.sub(_markup, text))
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    match = _TYPED_COMMAND.match(text)
    return "/" + text[1:] if match and match[1].lower() in COMMAND_NAMES else text


def _files(raw: object) -> tuple[RemoteFile, ...]:
    """An audio file (a clip recorded in Slack) is transcribed."""
    out: list[RemoteFile] = []
    for item in raw if isinstance(raw, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        url = item.get("url_private_download") or item.get("url_private")
        if not isinstance(url, str):
            continue
        name = str(item.get("name") or item.get("title") or "file")
        mime = item.get("mimetype") or "application/octet-stream"
        origin, size = f"slack:{item['id']}", item.get("size")
        out.append(RemoteFile.claimed(url, origin, name, size=size, mime=mime))
    return tuple(out)


SLACK_FILES = "https://files.slack.com"
LIMIT = FetchLimit(20 * 1024 * 1024, "Slack")


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class SlackFiles:
    """The kit's file source: a file's bytes from Slack's file host (or ``base_url``'s,
    a stand-in for Slack), with the bot token."""

    def __init__(self, bot_token: str, config: SlackConfig) -> None:
        self._auth = {"Authorization": f"Bearer {bot_token}"}
        self._origin = _origin(config.base_url or SLACK_FILES)
        self._downloads = FileDownloads(config.request_timeout * 4, limit=LIMIT.most)

    async def fetch(self, file: RemoteFile) -> bytes | bytearray:
        LIMIT.claim(file)
        if _origin(file.ref) != self._origin:
            # Never the token to a host that is not Slack's; the host alone is logged.
            host = urlsplit(file.ref).hostname
            log.warning("slack_file_elsewhere", host=host or "", file=file.origin)
            raise LIMIT.refusal(too_big=False)
        html = (file.mime_type or "").startswith("text/html")
        try:
            return await self._downloads.fetch(file.ref, headers=self._auth, html=html)
        except DownloadError as exc:
            log.warning("slack_file_refused", reason=exc.reason)
            raise LIMIT.refusal(too_big=exc.too_big) from None

    async def aclose(self) -> None:
        await self._downloads.aclose()
