"""What a browser tab of the chat page shows, kept up to date from the event stream as
the page's own script does it: a thread per tab reads ``/api/events``, applies each
event to the view and, when the stream drops, reconnects with ``Last-Event-ID`` (as
``EventSource`` does). A ``reset`` clears the view first, as the page does.

The view lists the bot's messages (answers, notices, images, voice clips) in order,
each as the person sees it: the visible text of its HTML and the styles its tags show.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import httpx

from tests.channels.contract.transport import Shown, Style
from tests.web.sse import Sse, parse

TAG_STYLES: dict[str, Style] = {
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


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.styles: set[Style] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in TAG_STYLES:
            self.styles.add(TAG_STYLES[tag])
        if tag in {"p", "li", "br", "pre", "tr"} and self.text:
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def visible(html: str) -> tuple[str, frozenset[Style]]:
    """An HTML fragment's text as shown, and the styles its tags show."""
    parser = _Visible()
    parser.feed(html)
    parser.close()
    return "".join(parser.text).strip(), frozenset(parser.styles)


@dataclass
class _Item:
    kind: str
    text: str = ""
    styles: frozenset[Style] = frozenset()
    turn: str | None = None
    key: str | None = None
    closed: bool = False


@dataclass
class PageView:
    """One tab of one login: its messages as they stand, and the stream behind them."""

    base_url: str
    cookie: str
    items: list[_Item] = field(default_factory=list)
    last_id: str | None = None
    drop_next_final: bool = False
    """Drop the stream on the next ``final`` before applying it (a connection lost
    with the answer on the wire); the reconnect must bring it exactly once."""
    dropped: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def open(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="page-view")
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def shown(self) -> list[Shown]:
        with self._lock:
            return [
                Shown(item.text, item.styles, image=item.kind == "image")
                for item in self.items
                if item.kind in {"notice", "image"} or (item.kind == "answer" and item.text)
            ]

    def audio(self) -> int:
        with self._lock:
            return sum(item.kind == "audio" for item in self.items)

    def open_question(self) -> str | None:
        with self._lock:
            for item in self.items:
                if item.kind == "approval" and not item.closed:
                    return item.key
        return None

    def _run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=httpx.Timeout(10, read=None)) as client:
            while not self._stop.is_set():
                # The daemon down or restarting: reconnect, as a browser does.
                with contextlib.suppress(httpx.HTTPError):
                    self._read(client)
                self._stop.wait(0.05)

    def _read(self, client: httpx.Client) -> None:
        headers = {"Cookie": self.cookie}
        if self.last_id:
            headers["Last-Event-ID"] = self.last_id
        with client.stream("GET", "/api/events", headers=headers) as response:
            if response.status_code != 200:
                return
            for event in parse(response.iter_lines()):
                if self._stop.is_set():
                    return
                if event.kind == "final" and self.drop_next_final:
                    self.drop_next_final = False
                    self.dropped += 1
                    return  # the connection lost with the final unread
                self._apply(event)

    def _apply(self, event: Sse) -> None:
        data: dict[str, Any] = event.data
        with self._lock:
            if event.kind == "reset":
                self.items.clear()
            elif event.kind in {"partial", "final"}:
                self._answer(data)
            elif event.kind == "notice":
                self.items.append(_Item("notice", visible(data["html"])[0]))
            elif event.kind in {"image", "audio"}:
                self.items.append(_Item(event.kind, visible(data.get("caption", ""))[0]))
            elif event.kind == "approval":
                self.items.append(_Item("approval", key=data["id"]))
            elif event.kind == "approval_closed":
                for item in self.items:
                    if item.kind == "approval" and item.key == data["id"]:
                        item.closed = True
            if event.id is not None:
                self.last_id = event.id

    def _answer(self, data: dict[str, Any]) -> None:
        text, styles = visible(data["html"])
        for item in self.items:
            if item.kind == "answer" and item.turn == data["turn"]:
                item.text, item.styles = text, styles
                return
        self.items.append(_Item("answer", text, styles, turn=data["turn"]))
