"""The IMAP side, through aioimaplib. Every failure of a connection (refused, dropped,
timed out, a command answered NO or BAD) is a :class:`MailboxError` saying what, without
the server's words (they could echo a secret); the caller decides whether to connect
again.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import socket
import ssl

import aioimaplib

from thalos_bot_email.config import EmailConfig, endpoint

_SELECTED = re.compile(rb"\[(UIDVALIDITY|UIDNEXT) (\d+)\]")
_FETCHED_UID = re.compile(rb"UID (\d+)")
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
IMAP_ERRORS = (aioimaplib.AioImapException, OSError, asyncio.TimeoutError, ssl.SSLError)
ANSWER = 10.0
"""How long the answer to an IDLE's DONE may take (at most ``timeout``): past it the
connection is deemed dead. The renewal's round trip is what proves it alive."""
KEEPALIVE = {"TCP_KEEPIDLE": 60, "TCP_KEEPINTVL": 15, "TCP_KEEPCNT": 4}
"""TCP keepalive: a peer whose end is gone (a host vanished, a NAT that forgot the
connection) is noticed after 2 minutes of silence, and a NAT sees the connection used."""


class MailboxError(Exception):
    """An IMAP command failed (``refused``: the server said no to the login)."""

    def __init__(self, what: str, *, refused: bool = False) -> None:
        super().__init__(what)
        self.refused = refused


def _uids(response: aioimaplib.Response) -> list[int]:
    """The UIDs of a UID SEARCH: its first line, ``1 4 9`` (aioimaplib has taken the
    ``* SEARCH`` off; it is skipped here too, should a version keep it)."""
    for line in response.lines:  # untagged news ("4 EXISTS") may come first
        words = bytes(line).split()
        if words[:1] == [b"SEARCH"]:
            words = words[1:]
        if all(word.isdigit() for word in words):
            return [int(word) for word in words]
    return []


class _Protocol(aioimaplib.IMAP4ClientProtocol):  # type: ignore[misc]
    """aioimaplib's protocol, noting each report of new mail (``* 4 EXISTS``) whatever
    command it comes with: aioimaplib drops one that comes during a SEARCH or a FETCH
    (asynchronous commands there, "ignored untagged response"), and the server does not
    report that mail again at the next IDLE."""

    news = False
    lost = False

    def _untagged_response(self, line: bytes) -> object:
        if line.endswith(b" EXISTS"):
            self.news = True
        return super()._untagged_response(line)

    def connection_lost(self, exc: Exception | None) -> None:
        """The server closed the connection (its idle logout, a restart): an IDLE waiting
        for a push, or a command waiting for its answer, is woken to say so (aioimaplib
        would wait out the IDLE's renewal or the command's timeout)."""
        self.lost = True
        self.idle_queue.put_nowait(aioimaplib.STOP_WAIT_SERVER_PUSH)
        for command in (self.pending_sync_command, *self.pending_async_commands.values()):
            if command is not None:  # aioimaplib has no public way to fail a command
                command._exception = aioimaplib.Abort("connection lost")  # noqa: SLF001
                command.close(b"connection lost", "NO")
        super().connection_lost(exc)


class Mailbox:
    def __init__(self, client: aioimaplib.IMAP4, poll: float) -> None:
        self.client, self.poll = client, poll
        self.selected: str | None = None

    @classmethod
    async def login(cls, config: EmailConfig, password: str) -> Mailbox:
        """The bot's mailbox (``imap_url``, with its login), opened."""
        where, login = endpoint(config.imap_url), config.login
        context = None if where.security == "plain" else ssl.create_default_context()
        client = aioimaplib.IMAP4(
            where.host, where.port, timeout=config.timeout, ssl_context=context
        )
        # The connection is made later, with the protocol the client holds then: ours.
        client.protocol = _Protocol(asyncio.get_running_loop(), None)
        mailbox, response = cls(client, config.poll_interval), None
        try:
            await client.wait_hello_from_server()
            sock = client.protocol.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for name, value in KEEPALIVE.items():  # where the system names the option
                if hasattr(socket, name):
                    sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
            response = await client.login(login, password)
        except IMAP_ERRORS as exc:
            raise MailboxError(f"cannot reach {where}: {type(exc).__name__}") from None
        finally:
            if response is None or response.result != "OK":  # failed, refused or cancelled
                await mailbox.close()
        if response.result != "OK":
            raise MailboxError(f"{where} refused the login of {login}", refused=True)
        return mailbox

    @property
    def changed(self) -> bool:
        """The server reported new mail since the last UID SEARCH began (the IDLE after
        it would not report it again): the caller searches again before it waits."""
        return bool(self.client.protocol.news)

    @property
    def idles(self) -> bool:
        return bool(self.client.has_capability("IDLE"))

    def _dead(self, what: str, exc: BaseException) -> MailboxError:
        """The connection is deemed dead (a LOGOUT on it would wait out its 5 s)."""
        self.client.protocol.lost = True
        return MailboxError(f"{what}: {type(exc).__name__}")

    async def _ok(self, what: str, call: object, *, ok: bool = True) -> aioimaplib.Response:
        try:
            response: aioimaplib.Response = await call  # type: ignore[misc]
        except IMAP_ERRORS as exc:
            raise self._dead(what, exc) from None
        if ok and response.result != "OK":
            raise MailboxError(f"{what}: {response.result}")
        return response

    async def select(self, folder: str) -> tuple[int, int]:
        """The folder's UIDVALIDITY and UIDNEXT (0: not said)."""
        response = await self._ok(f"SELECT {folder}", self.client.select(aioimaplib.quoted(folder)))
        self.selected = folder
        joined = b"\n".join(line for line in response.lines if isinstance(line, bytes))
        said = {name: int(value) for name, value in _SELECTED.findall(joined)}
        return said.get(b"UIDVALIDITY", 0), said.get(b"UIDNEXT", 0)

    async def search(self, *criteria: str) -> list[int]:
        response = await self._ok("UID SEARCH", self.client.uid_search(*criteria, charset=None))
        return sorted(_uids(response))

    async def uids_after(self, uid: int) -> list[int]:
        self.client.protocol.news = False
        # "n:*" names the last mail even when it is below n.
        return [n for n in await self.search(f"UID {uid + 1}:*") if n > uid]

    async def fetch(self, uid: int, limit: int) -> tuple[bytes | None, int]:
        """The mail (not marked seen) and its size; only its header when it is larger
        than ``limit``. None when it is gone."""
        fetch = self.client.uid
        sized = await self._ok("UID FETCH", fetch("fetch", str(uid), "(RFC822.SIZE)"))
        found = _SIZE.search(b" ".join(bytes(line) for line in sized.lines))
        size = int(found.group(1)) if found else 0
        part = "HEADER" if size > limit else ""
        response = await self._ok("UID FETCH", fetch("fetch", str(uid), f"(BODY.PEEK[{part}])"))
        for before, item in itertools.pairwise(response.lines):
            if isinstance(item, bytearray) and _FETCHED_UID.search(bytes(before)):
                return bytes(item), size
        return None, size

    async def find(self, folder: str, value: str, *headers: str) -> list[int]:
        """The UIDs of the mails in ``folder`` with ``value`` in any of ``headers``."""
        if self.selected != folder:
            await self.select(folder)
        either = ["OR"] * (len(headers) - 1)
        return await self.search(
            *either, *(w for h in headers for w in ("HEADER", h, aioimaplib.quoted(value)))
        )

    async def append(self, folder: str, raw: bytes) -> None:
        await self._ok(
            f"APPEND {folder}", self.client.append(raw, aioimaplib.quoted(folder), r"(\Seen)")
        )

    async def create(self, folder: str) -> None:
        """Make ``folder`` if it is not there (a NO says it already is)."""
        await self._ok(f"CREATE {folder}", self.client.create(aioimaplib.quoted(folder)), ok=False)

    async def wait(self, seconds: float) -> None:
        """Return once the selected folder may have new mail: an IDLE push saying so, or
        ``seconds`` passed (the caller renews the IDLE; the server's answer to its DONE,
        within :data:`ANSWER`, shows the connection alive). Without IDLE: a NOOP after
        ``poll``."""
        client = self.client
        if self.changed:  # see :attr:`changed`: search again first
            return
        if not self.idles:
            await asyncio.sleep(min(seconds, self.poll))
            await self.noop()
            return
        try:
            # aioimaplib waits for the server's "+ idling" without end
            idle = await asyncio.wait_for(client.idle_start(timeout=seconds), client.timeout)
            try:
                while client.has_pending_idle():
                    pushed = await client.wait_server_push(timeout=seconds + 5)
                    if pushed == aioimaplib.STOP_WAIT_SERVER_PUSH or self.changed:
                        break  # the protocol noted the push's EXISTS (:class:`_Protocol`)
            finally:  # a stop too ends the IDLE: the LOGOUT after it would wait for that
                client.idle_done()
            await asyncio.wait_for(idle, timeout=min(client.timeout, ANSWER))
        except IMAP_ERRORS as exc:
            if client.protocol.lost:  # woken by :meth:`_Protocol.connection_lost`
                raise MailboxError("IDLE: the server closed the connection") from None
            raise self._dead("IDLE", exc) from None

    async def noop(self) -> None:
        await self._ok("NOOP", self.client.noop())

    async def close(self) -> None:
        try:
            if not self.client.protocol.lost:  # a LOGOUT there would wait out the 5 s
                await asyncio.wait_for(self.client.logout(), 5)
        except (*IMAP_ERRORS, aioimaplib.Abort):
            pass
        finally:  # the socket is closed whatever came of the logout (a cancel included)
            for task in self.client.tasks:  # an IDLE given up: its end is not waited for
                task.cancel()
            transport = getattr(self.client.protocol, "transport", None)
            if transport is not None:
                transport.close()
