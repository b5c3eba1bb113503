"""A real ``thalos-bot run`` with the web channel on, answering through the Anthropic fake.

:class:`WebDaemon` starts the process on a free loopback port, waits for its
``web_listening`` log line (read by a thread, set as an event: no polling), and logs
principals in with the real ``thalos-bot web pair`` command. Each test uses principals of
its own, so tests sharing one daemon never share a conversation.
"""

from __future__ import annotations

import json
import re
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.channels.cli_process import clean_env, command, run_piped
from tests.daemon_config import anthropic_provider
from tests.ports import free_port
from tests.web.codes import login_code

PRINCIPALS = [f"p{n}" for n in range(1, 28)]
ADMIN_LOGIN = "p27"
"""A login whose person holds the ``admin`` role (not one of the page's owners)."""
MCP_SERVER = Path(__file__).parents[1] / "tools" / "mcp_test_server.py"
"""The tools tests' MCP server: its ``picture`` tool returns a PNG."""
LINK = re.compile(r"(http://\S+/login\?code=(\w+))")


def web_config(anthropic_url: str, port: int, extra: str = "") -> str:
    principals = ", ".join(f'"{p}"' for p in PRINCIPALS)
    return f"""
state_dir = "state"
[provider]
{anthropic_provider(anthropic_url)}
[pump]
flush_interval = "0.1s"
[[agents]]
id = "assistant"
name = "Assistant"
description = "A general assistant for everyday questions."
instructions = "You help."
[[agents]]
id = "coder"
name = "Coder"
description = "Writes, reviews and explains code."
instructions = "You write code."
[memory.embeddings]
mode = "off"
[[mcp_servers]]
name = "calc"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(MCP_SERVER))}]
[[tool_policies]]
tool = "memory__remember"
action = "ask"
[channels.console]
enabled = false
[[people]]
id = "boss"
roles = ["admin"]
identities = {{ web = ["{ADMIN_LOGIN}"] }}
[channels.web]
enabled = true
listen = "127.0.0.1:{port}"
principals = [{principals}]
owners = ["p1", "p18", "p25", "p26"]
flush_interval = "30ms"
max_message_chars = 32000
{extra}
"""


@dataclass
class WebDaemon:
    folder: Path
    port: int
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    listening: threading.Event = field(default_factory=threading.Event)
    clients: list[httpx.Client] = field(default_factory=list)
    closers: list[Callable[[], None]] = field(default_factory=list)
    """Other clients' ``close`` (the openai SDK's), called with :meth:`close_clients`."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if '"web_listening"' in line:
                self.listening.set()
        self.listening.set()

    def pair_link(self, principal: str, *, command: bool = False) -> tuple[str, str]:
        """A one-time link and its code: from the real ``thalos-bot web pair`` when
        ``command``, else written the way it writes them (quicker: no new process)."""
        if not command:
            code = login_code(self.folder / "state", principal)
            return f"{self.url}/login?code={code}", code
        result = run_piped(
            ["web", "pair", "--principal", principal], "", cwd=self.folder, timeout=60
        )
        assert result.returncode == 0, result.stderr
        found = LINK.search(result.stdout)
        assert found is not None, result.stdout
        return found.group(1), found.group(2)

    def login(self, principal: str) -> httpx.Client:
        """An HTTP client holding ``principal``'s session cookie."""
        _, code = self.pair_link(principal)
        client = self.client()
        answer = client.post("/login", data={"code": code}, follow_redirects=False)
        assert answer.status_code == 303, answer.text
        return client

    def client(self) -> httpx.Client:
        """A client closed when the test ends (see :meth:`close_clients`)."""
        client = httpx.Client(base_url=self.url, timeout=30)
        self.clients.append(client)
        return client

    def close_clients(self) -> None:
        while self.clients:
            self.clients.pop().close()
        while self.closers:
            self.closers.pop()()

    def csrf(self, client: httpx.Client) -> str:
        page = client.get("/")
        found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
        assert found is not None, page.text[:300]
        return found.group(1)

    def events(self, name: str) -> list[dict[str, object]]:
        found = []
        for line in self.lines:
            if line.startswith("{"):
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("event") == name:
                    found.append(entry)
        return found

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        return "".join(self.lines)


def _limit_descriptors(nofile: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))


@contextmanager
def web_daemon(
    folder: Path,
    anthropic_url: str,
    extra: str = "",
    *,
    nofile: int | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[WebDaemon]:
    """The daemon, with at most ``nofile`` open descriptors when given (a service's
    ``LimitNOFILE``), and ``env`` added to its environment."""
    port = free_port()
    (folder / "bot.toml").write_text(web_config(anthropic_url, port, extra), encoding="utf-8")
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=folder,
        env=clean_env({"ANTHROPIC_API_KEY": "sk-ant-fake-web-tests", **(env or {})}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=None if nofile is None else lambda: _limit_descriptors(nofile),  # noqa: PLW1509 - only setrlimit
    )
    daemon = WebDaemon(folder, port, process)
    reader = threading.Thread(target=daemon._read, daemon=True)
    reader.start()
    try:
        assert daemon.listening.wait(60), "the daemon did not start listening"
        assert process.poll() is None, "".join(daemon.lines)
        yield daemon
    finally:
        daemon.close_clients()
        daemon.stop()
        reader.join(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
