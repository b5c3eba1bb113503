"""A small MCP server for the tool tests, run as a subprocess.

    python mcp_test_server.py            # stdio
    python mcp_test_server.py http       # streamable HTTP on 127.0.0.1, free port
    python mcp_test_server.py http 8123  # the same on a given port (a restart test)
    python mcp_test_server.py http 0 no-get   # no standalone GET stream (405, as allowed)
    python mcp_test_server.py http 8123 wait  # load, print LOADED, bind after a stdin line

In HTTP mode every POST that opens a session (one without a session id) also prints a
line ``OPENED`` on stdout, and a refused GET prints ``NO-GET``, so a test can wait for a
client to start a new session, or to give up on the GET stream.

In HTTP mode the first line on stdout is ``PORT <n>``. Every tool call is appended as a
JSON line to the file named by ``$MCP_TEST_RECORD`` (when set), so a test can check
what the server received and whether calls overlapped.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import CallToolResult, TextContent
from starlette.types import ASGIApp, Receive, Scope, Send

server = MCPServer("thalos-test")


@dataclass
class _Meeting:
    arrived: int = 0
    size: int | None = None
    complete: anyio.Event = field(default_factory=anyio.Event)


_meetings: dict[str, _Meeting] = {}


def _arrive(group: str, size: int | None = None) -> anyio.Event:
    """Count one arrival at ``group``; its event is set once ``size`` have arrived."""
    meeting = _meetings.setdefault(group, _Meeting())
    meeting.arrived += 1
    if size is not None:
        meeting.size = size
    if meeting.size is not None and meeting.arrived >= meeting.size:
        meeting.complete.set()
    return meeting.complete


# A 1x1 transparent PNG.
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def _record(event: str, tool: str, **data: Any) -> None:
    path = os.environ.get("MCP_TEST_RECORD")
    if not path:
        return
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps({"event": event, "tool": tool, **data}) + "\n")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    _record("call", "echo", text=text)
    return text


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    _record("call", "add", a=a, b=b)
    return str(a + b)


@server.tool()
def fail(message: str = "it went wrong") -> CallToolResult:
    """Return an error result."""
    _record("call", "fail", message=message)
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


@server.tool()
def record(note: str) -> str:
    """Record a note in the side-effect log."""
    _record("call", "record", note=note)
    return "recorded"


@server.tool()
async def slow(seconds: float, tag: str = "", meet: str = "") -> str:
    """Sleep, recording the start, the end or the cancellation; arrive at ``meet`` first."""
    _record("start", "slow", tag=tag)
    if meet:
        _arrive(meet)
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _record("cancelled", "slow", tag=tag)
        raise
    _record("end", "slow", tag=tag)
    return f"slept {seconds}"


@server.tool()
async def rendezvous(group: str, size: int) -> str:
    """Wait until ``size`` calls of ``group`` are running at once ("met"), or give up."""
    _record("start", "rendezvous", group=group)
    event = _arrive(group, size)
    with anyio.move_on_after(20):
        await event.wait()
    return "met" if event.is_set() else "alone"


@server.tool()
def crash() -> str:
    """Exit the process at once."""
    _record("call", "crash")
    sys.stderr.write("test server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def big(size: int) -> str:
    """Return ``size`` characters."""
    return "x" * size


@server.tool()
def picture() -> Image:
    """Return a tiny PNG image."""
    return Image(data=_PNG, format="png")


@server.tool()
def only_structured() -> CallToolResult:
    """Return structured content and no text."""
    return CallToolResult(content=[], structured_content={"answer": 42})


@server.tool()
def env(name: str) -> str:
    """Return an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def header(name: str, ctx: Context[Any, Any]) -> str:
    """Return an HTTP request header (streamable HTTP only)."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), "<unset>")


@server.tool(name="say.hello")
def say_hello(who: str) -> str:
    """A tool whose name needs sanitising."""
    _record("call", "say.hello", who=who)
    return f"hello {who}"


def _watched(app: ASGIApp, *, get_stream: bool) -> ASGIApp:
    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if scope["method"] == "GET" and not get_stream:
                print("NO-GET", flush=True)
                start = {"type": "http.response.start", "status": 405, "headers": []}
                await send(start)
                await send({"type": "http.response.body", "body": b""})
                return
            if scope["method"] == "POST" and b"mcp-session-id" not in headers:
                print("OPENED", flush=True)
        await app(scope, receive, send)

    return watched


def _serve_http(port: int = 0, *flags: str) -> None:
    app = _watched(server.streamable_http_app(), get_stream="no-get" not in flags)
    if "wait" in flags:  # ready to serve; bind when told (a restart with no long gap)
        print("LOADED", flush=True)
        sys.stdin.readline()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        _serve_http(int(sys.argv[2]) if sys.argv[2:] else 0, *sys.argv[3:])
    else:
        server.run()
