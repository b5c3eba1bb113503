"""Reading a Server-Sent Events stream with httpx, event by event."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True, slots=True)
class Sse:
    kind: str
    data: dict[str, Any]
    id: str | None


def parse(lines: Iterator[str]) -> Iterator[Sse]:
    kind, data, event_id = "message", "", None
    for line in lines:
        if line == "":
            if data:
                yield Sse(kind, json.loads(data), event_id)
            kind, data, event_id = "message", "", None
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                kind = value
            elif name == "data":
                data += value
            elif name == "id":
                event_id = value


def read_until(
    client: httpx.Client,
    done: Callable[[list[Sse]], bool],
    *,
    last_id: str | None = None,
) -> list[Sse]:
    """Events from a fresh stream (resuming after ``last_id``) until ``done`` says so;
    then the connection is dropped."""
    headers = {"Last-Event-ID": last_id} if last_id else {}
    seen: list[Sse] = []
    with client.stream("GET", "/api/events", headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in parse(response.iter_lines()):
            seen.append(event)
            if done(seen):
                break
    return seen
