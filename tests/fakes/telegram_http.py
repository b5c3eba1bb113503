"""Just enough HTTP/1.1 for the Telegram fake: requests in, JSON responses out.

A small server on asyncio streams rather than a framework, because the fake must be
able to do what frameworks hide: close a connection without an answer, or answer
never. Keep-alive is honoured (httpx reuses connections); request bodies come with a
Content-Length or chunked; parameters come from the query string and a form, JSON or
multipart body.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import HTTP
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

Json = dict[str, Any]

MAX_HEAD = 64 * 1024


class BadHttpRequestError(Exception):
    """The bytes on the wire are not a request this server understands."""


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool

    def params(self) -> Json:
        """Query string and body parameters, body winning (as Telegram does)."""
        params: Json = dict(parse_qsl(self.query, keep_blank_values=True))
        content_type = self.headers.get("content-type", "")
        kind = content_type.split(";", 1)[0].strip().lower()
        if kind == "application/x-www-form-urlencoded":
            params.update(parse_qsl(self.body.decode("utf-8"), keep_blank_values=True))
        elif kind == "application/json":
            try:
                decoded = json.loads(self.body or b"{}")
            except ValueError as error:
                raise BadHttpRequestError("the body is not JSON") from error
            if not isinstance(decoded, dict):
                raise BadHttpRequestError("the JSON body is not an object")
            params.update(decoded)
        elif kind == "multipart/form-data":
            params.update(_multipart(content_type, self.body))
        return params


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """The next request on the connection, or None once the client has closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise BadHttpRequestError("the connection closed inside a request head") from error
        return None
    except asyncio.LimitOverrunError as error:
        raise BadHttpRequestError("the request head is too large") from error
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, version = request_line.split(" ", 2)
    except ValueError as error:
        raise BadHttpRequestError(f"bad request line {request_line!r}") from error
    headers: dict[str, str] = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0") or "0"))
    path, _, query = target.partition("?")
    connection = headers.get("connection", "").lower()
    keep_alive = version == "HTTP/1.1" and connection != "close"
    return HttpRequest(method.upper(), path, query, headers, body, keep_alive)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _multipart(content_type: str, body: bytes) -> Json:
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    params: Json = {}
    for part in message.iter_parts():
        if not isinstance(part, EmailMessage):
            continue
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(data, bytes):
            continue
        filename = part.get_filename()
        # A file parameter keeps its name, size and bytes (sendPhoto checks the image).
        params[name] = (
            {"filename": filename, "size": len(data), "content": data}
            if filename
            else data.decode("utf-8")
        )
    return params


def encode_response(status: int, payload: Json, *, keep_alive: bool) -> bytes:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "Server: telegram-fake\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
        "\r\n"
    )
    return head.encode("latin-1") + body


def encode_raw_response(
    status: int,
    body: bytes,
    *,
    keep_alive: bool,
    content_type: str = "application/octet-stream",
) -> bytes:
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "Server: telegram-fake\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
        "\r\n"
    )
    return head.encode("latin-1") + body
