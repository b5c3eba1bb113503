"""The OpenAI-compatible API, driven by the official ``openai`` SDK (sync and async,
streamed and not) against the real daemon (``thalos-bot run``, the web channel with
``api = true``) and the Anthropic fake: keys made and revoked by ``thalos-bot api key``,
each acting as its person; the daemon keeps the session, so the history a frontend
sends again is not added twice, and an edited earlier message starts a new session."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.channels.cli_process import run_piped
from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.web.harness import WebDaemon, web_daemon

KEY = re.compile(r"^(thk_\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def api_daemon(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[WebDaemon, AnthropicFake]]:
    with (
        AnthropicFake() as anthropic,
        web_daemon(
            tmp_path_factory.mktemp("api-daemon"), anthropic.base_url, "api = true"
        ) as daemon,
    ):
        yield daemon, anthropic


def make_key(daemon: WebDaemon, *args: str) -> str:
    made = run_piped(["api", "key", "create", *args], "", cwd=daemon.folder, timeout=60)
    assert made.returncode == 0, made.stderr
    found = KEY.search(made.stdout)
    assert found is not None, made.stdout
    return found.group(1)


def client(daemon: WebDaemon, key: str) -> openai.OpenAI:
    """The SDK's client; its connections are closed with the daemon's clients."""
    api = openai.OpenAI(base_url=f"{daemon.url}/v1", api_key=key, max_retries=0)
    daemon.closers.append(api.close)
    return api


def last_user_texts(anthropic: AnthropicFake) -> list[str]:
    """What the model was sent as the user's words, in the last request."""
    messages = anthropic.requests[-1].body["messages"]
    said: list[str] = []
    for message in messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [content] if isinstance(content, str) else content
        said += [b if isinstance(b, str) else str(b.get("text", "")) for b in blocks]
    return said


def test_models_and_a_whole_answer_with_usage(
    api_daemon: tuple[WebDaemon, AnthropicFake],
) -> None:
    daemon, anthropic = api_daemon
    api = client(daemon, make_key(daemon, "--person", "p1"))
    assert sorted(m.id for m in api.models.list()) == ["assistant", "coder"]
    anthropic.enqueue(text_reply("Hello from the bot."))
    done = api.chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "hi, whole please"}]
    )
    assert done.choices[0].message.content == "Hello from the bot."
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None
    assert done.usage.completion_tokens > 0
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens


def test_a_streamed_answer_with_usage_in_the_last_chunk(
    api_daemon: tuple[WebDaemon, AnthropicFake],
) -> None:
    daemon, anthropic = api_daemon
    api = client(daemon, make_key(daemon, "--person", "p2"))
    anthropic.enqueue(text_reply("Streamed words arrive here."))
    chunks = list(
        api.chat.completions.create(
            model="assistant",
            messages=[{"role": "user", "content": "stream it"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streamed words arrive here."
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


@pytest.mark.anyio
async def test_the_async_client_streams_too(api_daemon: tuple[WebDaemon, AnthropicFake]) -> None:
    daemon, anthropic = api_daemon
    key = make_key(daemon, "--person", "p3")
    anthropic.enqueue(text_reply("Async hello."))
    async with openai.AsyncOpenAI(base_url=f"{daemon.url}/v1", api_key=key) as api:
        stream = await api.chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "async?"}], stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "Async hello."


def test_the_history_is_kept_once_and_an_edit_starts_anew(
    api_daemon: tuple[WebDaemon, AnthropicFake],
) -> None:
    daemon, anthropic = api_daemon
    api = client(daemon, make_key(daemon, "--person", "p4"))
    anthropic.enqueue(text_reply("First answer."), text_reply("Second answer."))
    first = [{"role": "user", "content": "my name is Ada"}]
    api.chat.completions.create(model="assistant", messages=first)  # type: ignore[arg-type]
    second = [
        *first,
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "what is my name?"},
    ]
    api.chat.completions.create(model="assistant", messages=second)  # type: ignore[arg-type]
    said = last_user_texts(anthropic)
    assert said.count("my name is Ada") == 1  # the daemon's session: not sent twice
    assert "what is my name?" in said
    anthropic.enqueue(text_reply("Third answer."))
    edited = [
        *first,
        {"role": "assistant", "content": "First answer, edited by the user."},
        {"role": "user", "content": "and now?"},
    ]
    api.chat.completions.create(model="assistant", messages=edited)  # type: ignore[arg-type]
    assert last_user_texts(anthropic) == ["and now?"]  # a new session


def test_a_command_works_as_a_message(api_daemon: tuple[WebDaemon, AnthropicFake]) -> None:
    daemon, _ = api_daemon
    api = client(daemon, make_key(daemon, "--person", "p5"))
    done = api.chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "/status"}]
    )
    assert (done.choices[0].message.content or "").startswith("Agent:")


def test_keys_that_are_wrong_revoked_expired_or_for_another_agent_are_refused(
    api_daemon: tuple[WebDaemon, AnthropicFake], tmp_path: Path
) -> None:
    daemon, _ = api_daemon
    hello = [{"role": "user", "content": "hello"}]
    with pytest.raises(openai.AuthenticationError):
        client(daemon, "thk_not-a-key").models.list()
    key = make_key(daemon, "--person", "p6")
    listed = run_piped(["api", "key", "list"], "", cwd=daemon.folder, timeout=60)
    key_id = next(line.split()[0] for line in listed.stdout.splitlines() if " p6 " in line)
    revoked = run_piped(["api", "key", "revoke", key_id], "", cwd=daemon.folder, timeout=60)
    assert revoked.returncode == 0, revoked.stderr
    with pytest.raises(openai.AuthenticationError, match="revoked"):
        client(daemon, key).models.list()
    expired = make_key(daemon, "--person", "p7", "--expires", "0s")
    with pytest.raises(openai.AuthenticationError, match="expired"):
        client(daemon, expired).models.list()
    coder_only = client(daemon, make_key(daemon, "--person", "p8", "--agent", "coder"))
    assert [m.id for m in coder_only.models.list()] == ["coder"]
    with pytest.raises(openai.PermissionDeniedError):
        coder_only.chat.completions.create(model="assistant", messages=hello)  # type: ignore[arg-type]
    with pytest.raises(openai.NotFoundError):
        coder_only.chat.completions.create(model="nobody", messages=hello)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="tools run inside the daemon"):
        coder_only.chat.completions.create(
            model="coder",
            messages=hello,  # type: ignore[arg-type]
            tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        )
    bad = run_piped(
        ["api", "key", "create", "--person", "p9", "--agent", "x"], "", cwd=daemon.folder
    )
    assert bad.returncode == 1
    assert "--agent: 'x' is not an agent" in bad.stderr
