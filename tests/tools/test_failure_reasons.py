"""A server that fails says why in words the operator can act on: the end of what it
wrote to stderr (secrets scrubbed) is part of the reason ``thalos-bot tools``,
``doctor`` and ``/status`` show. Real subprocesses, real stderr."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.fakes.loopback_http import serving
from tests.tools.conftest import LIMITS, context, tool_call
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.service.doctor import run_doctor
from thalos_bot.service.host import tool_status
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers
from thalos_bot.tools.mcp.stderr import excerpt

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "tok-5d1e0c9b8a7f"
COMPLAINS = (
    "import os, sys\n"
    "for n in range(1, 9): print(f'starting step {n}', file=sys.stderr)\n"
    "print('fatal: token ' + os.environ['TOKEN'] + ' was refused', file=sys.stderr)\n"
    "sys.exit(1)\n"
)


def _quitter(name: str = "quits") -> McpServerSettings:
    return McpServerSettings(
        name=name,
        command=sys.executable,
        args=["-c", COMPLAINS],
        env={"TOKEN": "${THALOS_TEST_TOKEN}"},
    )


async def test_a_server_that_exits_at_once_shows_its_last_stderr_lines() -> None:
    environ = {"THALOS_TEST_TOKEN": SECRET}
    with capture_logs() as logs:
        async with McpServers.start([_quitter()], LIMITS, environ=environ) as servers:
            status = servers.sources[0].status()
            shown = tool_status(SourceCatalog(servers.sources))
            called = await SourceCatalog(servers.sources).call(
                tool_call("quits__anything"), context()
            )
    assert status.state == "failed"
    assert status.reason == "the server closed the connection"
    assert status.stderr == (
        "starting step 4 | starting step 5 | starting step 6 | starting step 7 | "
        "starting step 8 | fatal: token [hidden] was refused"
    )
    assert shown == [f"quits: failed: the server closed the connection (stderr: {status.stderr})"]
    assert SECRET not in repr(logs)
    assert SECRET not in status.describe()
    assert "stderr" not in called.content, "the model gets the reason, not the server's log"


async def test_doctor_shows_the_stderr_excerpt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THALOS_TEST_TOKEN", SECRET)
    config = tmp_path / "bot.toml"
    config.write_text(
        'state_dir = "state"\n[provider]\nkind = "scripted"\n'
        "[[mcp_servers]]\n"
        f'name = "quits"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-c", {json.dumps(COMPLAINS)}]\n'
        'env = { TOKEN = "${THALOS_TEST_TOKEN}" }\n',
        encoding="utf-8",
    )
    with capture_logs():
        checks = {c.name: c for c in await run_doctor(config, offline=True)}
    check = checks["MCP server quits"]
    assert check.outcome == "fail"
    assert check.detail.startswith("failed: the server closed the connection (stderr: ")
    assert check.detail.endswith("starting step 8 | fatal: token [hidden] was refused)")
    assert SECRET not in check.detail


# --- npx and a package that does not exist -------------------------------------------


class _NoPackages(BaseHTTPRequestHandler):
    """An npm registry that has no packages: 404 with the registry's JSON body."""

    def do_GET(self) -> None:
        body = json.dumps({"error": "Not found"}).encode()
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        return None


@pytest.fixture
def empty_registry() -> Iterator[str]:
    with serving(_NoPackages) as url:
        yield f"{url}/"


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")
async def test_an_npx_package_that_does_not_exist_says_so(
    empty_registry: str, tmp_path: Path
) -> None:
    settings = McpServerSettings(
        name="ghost",
        command="npx",
        args=["--yes", "@thalos-test/no-such-server"],
        env={
            "npm_config_registry": empty_registry,
            "npm_config_cache": str(tmp_path / "npm-cache"),
            "npm_config_update_notifier": "false",
        },
    )
    with capture_logs():
        async with McpServers.start([settings], LIMITS) as servers:
            status = servers.sources[0].status()
    assert status.state == "failed"
    assert "npm error 404 Not Found - GET " in status.stderr
    assert "'@thalos-test/no-such-server@*' could not be found" in status.stderr
    assert "(stderr: npm error" in status.describe()


# --- the excerpt ----------------------------------------------------------------------


def test_the_excerpt_keeps_the_informative_end() -> None:
    npm = (
        "npm error code E404\n"
        "npm error 404 Not Found - GET http://r/@a%2fb - Not found\n"
        "npm error 404\n"
        "npm error 404  The requested resource '@a/b@*' could not be found.\n"
        "npm error 404\n"
    )
    assert excerpt(npm) == (
        "npm error code E404 | npm error 404 Not Found - GET http://r/@a%2fb - Not found | "
        "npm error 404 The requested resource '@a/b@*' could not be found."
    )
    assert excerpt("\n\n  \n") == ""
    long = excerpt("x" * 5000)
    assert len(long) == 200
    assert long.endswith("…")
    many = excerpt("\n".join(f"line {n} " + "y" * 150 for n in range(20)))
    assert many.startswith("line 17 ")
    assert many.count(" | ") == 2, "about 600 characters"
