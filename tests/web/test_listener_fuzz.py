"""Fuzzing the web listener on a real daemon: the login form, approvals, the event
stream, the OpenAI-compatible API and the webhooks get hostile requests (see
:mod:`tests.web.fuzz_requests`); none is answered 5xx, and the page still answers.

A bounded run (the hypothesis profile's budget); ``bench/fuzz.py`` runs longer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.hypothesis_budget import examples
from tests.web.fuzz_requests import (
    HOOK_SECRET,
    HOOK_SECRET_ENV,
    HOOKS,
    Probe,
    approve_probe,
    generic_probe,
    probes,
    send,
)
from tests.web.harness import WebDaemon, web_daemon

pytestmark = pytest.mark.slow


@dataclass
class Target:
    """The daemon under fuzzing, a logged-in client and its CSRF token (a short repr:
    hypothesis prints it with each failing example)."""

    daemon: WebDaemon
    client: httpx.Client
    csrf: str

    def __repr__(self) -> str:
        return f"Target({self.daemon.url})"


ANSWERS = 2_000
"""Replies queued for the runs that valid webhook deliveries start (one each at most)."""


@pytest.fixture(scope="module")
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Target]:
    folder = tmp_path_factory.mktemp("web-fuzz")
    with (
        AnthropicFake() as anthropic,
        web_daemon(folder, anthropic.base_url, HOOKS, env={HOOK_SECRET_ENV: HOOK_SECRET}) as daemon,
    ):
        anthropic.enqueue(*[text_reply("noted") for _ in range(ANSWERS)])
        client = daemon.login("p9")
        yield Target(daemon, client, daemon.csrf(client))
        daemon.stop()
        anthropic.discard_pending()


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(
    max_examples=examples(200),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(probe=probes)
@example(probe=approve_probe(b'{"id": "", "verdict": []}'))
@example(probe=approve_probe(b"[" * 5000 + b"]" * 5000))
@example(probe=Probe("GET", "/", {"cookie": "thalos_web=a.\xe9"}))
@example(
    probe=Probe(
        "POST", "/api/approve", {"x-csrf-token": "\xe9"}, b"{}", logged_in=True, own_csrf=True
    )
)
@example(probe=generic_probe(b"{}", "\xb2", signed=True, delivery=""))
def test_no_request_is_answered_5xx(fuzzed: Target, probe: Probe) -> None:
    with httpx.Client(base_url=fuzzed.daemon.url, timeout=30) as plain:
        status = send(plain, fuzzed.client, fuzzed.csrf, probe)
    assert status < 500, (probe, fuzzed.daemon.lines[-3:])


def test_the_page_still_answers_after_the_fuzzing(
    fuzzed: Target,
) -> None:
    assert fuzzed.daemon.process.poll() is None
    assert fuzzed.client.get("/").status_code == 200
