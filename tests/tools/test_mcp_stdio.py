"""The catalog over a real MCP server subprocess (stdio)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from tests.tools.conftest import (
    LIMITS,
    agent,
    cancel_once_running,
    context,
    read_record,
    stdio_server,
    tool_call,
)
from thalos_bot.config.tools import ToolsSettings
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers, McpServerSource
from thalos_bot.tools.source import ToolSource

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _is_a_tool_source(source: McpServerSource) -> ToolSource:
    return source  # checked by mypy


async def test_lists_and_calls_tools(record: Path) -> None:
    async with McpServers.start([stdio_server(record=record)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        specs = {spec.name: spec for spec in catalog.specs_for(agent())}
        assert {"test__echo", "test__add", "test__say_hello"} <= set(specs)
        assert specs["test__add"].description == "Add two integers."
        assert specs["test__add"].input_schema["required"] == ["a", "b"]

        echoed = await catalog.call(tool_call("test__echo", text="hi there"), context())
        added = await catalog.call(tool_call("test__add", a=2, b=3), context())
        hello = await catalog.call(tool_call("test__say_hello", who="bob"), context())

    assert (echoed.content, echoed.outcome) == ("hi there", "ok")
    assert (added.content, added.outcome) == ("5", "ok")
    assert hello.content == "hello bob"
    assert [e for e in read_record(record) if e["tool"] == "say.hello"] == [
        {"event": "call", "tool": "say.hello", "who": "bob"}
    ]
    assert servers.sources[0].status().state == "stopped"


async def test_an_error_result_reaches_the_model_as_an_error() -> None:
    async with McpServers.start([stdio_server()], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        failed = await catalog.call(tool_call("test__fail", message="disk full"), context())
        bad_args = await catalog.call(tool_call("test__add", a="x"), context())
        after = await catalog.call(tool_call("test__echo", text="still here"), context())
    assert (failed.content, failed.outcome) == ("disk full", "error")
    assert bad_args.outcome == "error"
    assert after.outcome == "ok"


async def test_a_slow_call_times_out_and_the_server_stays_usable(record: Path) -> None:
    server = stdio_server(record=record, timeout=1)
    async with McpServers.start([server], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        with anyio.fail_after(15):
            slow = await catalog.call(tool_call("test__slow", seconds=60, tag="t"), context())
        after = await catalog.call(tool_call("test__echo", text="next"), context())
    assert slow.outcome == "error"
    assert "did not finish within 1s" in slow.content
    assert (after.content, after.outcome) == ("next", "ok")
    # The SDK told the server to stop working on it.
    events = [e["event"] for e in read_record(record) if e["tool"] == "slow"]
    assert events in (["start", "cancelled"], [])


async def test_cancelling_the_caller_interrupts_the_call_promptly(record: Path) -> None:
    async with McpServers.start([stdio_server(record=record)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        await cancel_once_running(catalog, "test", "c")  # a day's call, interrupted
        with anyio.fail_after(5):
            after = await catalog.call(tool_call("test__echo", text="after cancel"), context())
    assert (after.content, after.outcome) == ("after cancel", "ok")
    # The server was told, and stopped the work: it never ran to its end.
    events = [e["event"] for e in read_record(record) if e["tool"] == "slow"]
    assert events == ["start", "cancelled"]


async def test_concurrent_calls_run_at_the_same_time_on_one_server(record: Path) -> None:
    """``rendezvous`` answers "met" only when all calls are inside the server at once."""
    answers: list[str] = []
    async with McpServers.start([stdio_server(record=record)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources, max_parallel_calls=4)

        async def meet() -> None:
            result = await catalog.call(tool_call("test__rendezvous", group="g", size=4), context())
            answers.append(result.content)

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(meet)
    assert answers == ["met"] * 4


async def test_a_crashed_server_is_restarted_on_next_use() -> None:
    with capture_logs() as logs:
        async with McpServers.start([stdio_server()], LIMITS) as servers:
            catalog = SourceCatalog(servers.sources)
            crashed = await catalog.call(tool_call("test__crash"), context())
            after = await catalog.call(tool_call("test__echo", text="back"), context())
            status = servers.sources[0].status()
    assert crashed.outcome == "error"
    assert "restarted" in crashed.content
    assert (after.content, after.outcome) == ("back", "ok")
    assert status.describe().startswith("ready")
    down = [e for e in logs if e["event"] == "mcp-server-down"]
    assert len(down) == 1
    assert "crashing on purpose" in down[0]["stderr_tail"]
    ready = [e for e in logs if e["event"] == "mcp-server-ready"]
    assert [e["restarted"] for e in ready] == [False, True]


async def test_a_server_that_keeps_failing_is_not_restarted_during_backoff() -> None:
    async with McpServers.start([stdio_server()], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        await catalog.call(tool_call("test__crash"), context())
        # Restarted at once, then crashes again before any call succeeded.
        await catalog.call(tool_call("test__crash"), context())
        with anyio.fail_after(5):
            during = await catalog.call(tool_call("test__echo", text="x"), context())
        status = servers.sources[0].status()
    assert during.outcome == "error"
    assert "unavailable" in during.content
    assert "next restart is in" in during.content
    assert status.state == "unavailable"


async def test_policy_refuses_before_the_server_hears_of_the_call(record: Path) -> None:
    from thalos_bot.tools.policy import PolicySet, ToolPolicy

    policies = PolicySet([ToolPolicy("test__record", frozenset({"developer"}))])
    async with McpServers.start([stdio_server(record=record)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources, policies)
        refused = await catalog.call(tool_call("test__record", note="guest"), context("guest"))
        allowed = await catalog.call(
            tool_call("test__record", note="dev"), context("developer", "guest")
        )
    assert refused.outcome == "refused"
    assert "not permitted for this caller" in refused.content
    assert allowed.outcome == "ok"
    notes = [e["note"] for e in read_record(record) if e["tool"] == "record"]
    assert notes == ["dev"]


async def test_tools_outside_an_agents_globs_do_not_exist_for_it(record: Path) -> None:
    narrow = agent("test__echo", "test__say_*", agent_id="narrow")
    async with McpServers.start([stdio_server(record=record)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        names = [spec.name for spec in catalog.specs_for(narrow)]
        hidden = await catalog.call(tool_call("test__record", note="x"), context(who=narrow))
        missing = await catalog.call(tool_call("test__nothing"), context(who=narrow))
    assert names == ["test__echo", "test__say_hello"]
    assert hidden.outcome == missing.outcome == "error"
    assert hidden.content == "There is no tool named 'test__record'."
    assert missing.content == "There is no tool named 'test__nothing'."
    assert not [e for e in read_record(record) if e["tool"] == "record"]


async def test_allow_and_deny_filter_a_servers_tools() -> None:
    server = stdio_server(allow=["e*", "add"], deny=["env"])
    async with McpServers.start([server], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        names = [spec.name for spec in catalog.specs_for(agent())]
        denied = await catalog.call(tool_call("test__env", name="PATH"), context())
    assert names == ["test__echo", "test__add"]
    assert denied.content == "There is no tool named 'test__env'."


async def test_large_and_non_text_results() -> None:
    limits = ToolsSettings(max_result_chars=1000)
    async with McpServers.start([stdio_server()], limits) as servers:
        catalog = SourceCatalog.from_settings(servers.sources, [], limits)
        big = await catalog.call(tool_call("test__big", size=50_000), context())
        picture = await catalog.call(tool_call("test__picture"), context())
        structured = await catalog.call(tool_call("test__only_structured"), context())
    assert big.outcome == "ok"
    assert big.content.startswith("x" * 1000 + "\n")
    assert big.content.endswith("[truncated: 49000 of 50000 characters cut]")
    assert picture.content.startswith("[image: image/png, ")
    (image,) = picture.images  # the user is shown it: the bytes travel on
    assert (image.tool, image.media_type) == ("test__picture", "image/png")
    assert image.data.startswith(b"\x89PNG")
    assert structured.content == '{"answer": 42}'


async def test_env_references_are_resolved_from_the_environment() -> None:
    secret = "s3cr3t-value-123"
    server = stdio_server(env={"GREETING": "Bearer ${THALOS_TEST_TOKEN}"})
    with capture_logs() as logs:
        async with McpServers.start(
            [server], LIMITS, environ={"THALOS_TEST_TOKEN": secret}
        ) as servers:
            catalog = SourceCatalog(servers.sources)
            seen = await catalog.call(tool_call("test__env", name="GREETING"), context())
    assert seen.content == f"Bearer {secret}"
    assert secret not in repr(logs)


async def test_a_missing_variable_fails_that_server_only() -> None:
    broken = stdio_server(name="broken", env={"TOKEN": "${THALOS_TEST_UNSET}"})
    with capture_logs() as logs:
        async with McpServers.start([stdio_server(), broken], LIMITS, environ={}) as servers:
            states = {s.name: s.status() for s in servers}
            catalog = SourceCatalog(servers.sources)
            names = {spec.name.split("__")[0] for spec in catalog.specs_for(agent())}
            works = await catalog.call(tool_call("test__echo", text="ok"), context())
    assert states["test"].state == "ready"
    assert states["broken"].state == "failed"
    assert "THALOS_TEST_UNSET" in states["broken"].reason
    assert "env.TOKEN" in states["broken"].reason
    assert names == {"test"}
    assert works.outcome == "ok"
    failed = [e for e in logs if e["event"] == "mcp-server-failed"]
    assert [e["server"] for e in failed] == ["broken"]


async def test_servers_that_fail_to_start_leave_the_others_working() -> None:
    servers_config = [
        stdio_server(),
        stdio_server(name="missing", command="/nonexistent/mcp-server", args=[]),
        stdio_server(
            name="quits",
            args=["-c", "import sys; sys.stderr.write('no config found\\n'); sys.exit(2)"],
        ),
        stdio_server(name="mute", args=["-c", "import time; time.sleep(60)"], startup_timeout=1.5),
        stdio_server(name="off", enabled=False),
    ]
    with capture_logs() as logs, anyio.fail_after(40):
        async with McpServers.start(servers_config, LIMITS) as servers:
            status = {s.name: s.status() for s in servers}
            catalog = SourceCatalog(servers.sources)
            prefixes = {spec.name.split("__")[0] for spec in catalog.specs_for(agent())}
            works = await catalog.call(tool_call("test__echo", text="fine"), context())
    assert status["test"].state == "ready"
    assert status["missing"].describe() == (
        "failed: cannot run '/nonexistent/mcp-server': no such file or directory"
    )
    assert status["quits"].describe() == (
        "failed: the server closed the connection (stderr: no config found)"
    )
    assert status["mute"].describe() == "failed: did not start within 1.5s"
    assert status["off"].describe() == "disabled"
    assert prefixes == {"test"}
    assert works.outcome == "ok"
    quits = next(e for e in logs if e["event"] == "mcp-server-failed" and e["server"] == "quits")
    assert quits["stderr_tail"] == "no config found"


async def test_secrets_from_the_environment_stay_out_of_the_log() -> None:
    secret = "tok-9f8e7d6c5b"
    leaky = stdio_server(
        name="leaky",
        args=[
            "-c",
            "import os, sys; sys.stderr.write('token=' + os.environ['TOKEN']); sys.exit(1)",
        ],
        env={"TOKEN": "${THALOS_TEST_SECRET}"},
    )
    with capture_logs() as logs:
        async with McpServers.start([leaky], LIMITS, environ={"THALOS_TEST_SECRET": secret}):
            pass
    [failed] = [e for e in logs if e["event"] == "mcp-server-failed"]
    assert failed["stderr_tail"] == "token=[hidden]"
    assert secret not in repr(logs)
