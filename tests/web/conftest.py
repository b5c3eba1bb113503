"""One Anthropic fake and one daemon with the web channel for the whole tests/web session,
and a real Chromium (Debian's, driven by Playwright through ``executable_path``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Error, Playwright, sync_playwright

from tests.fakes.anthropic_api import AnthropicFake
from tests.web.harness import WebDaemon, web_daemon

CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
ARTIFACTS_ENV = "THALOS_WEB_ARTIFACTS"
"""Where screenshots go (default: ``tests/web/artifacts``, ignored by git)."""


@pytest.fixture(scope="session")
def anthropic() -> Iterator[AnthropicFake]:
    with AnthropicFake() as fake:
        yield fake


@pytest.fixture(scope="session")
def daemon(
    anthropic: AnthropicFake, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebDaemon]:
    with web_daemon(tmp_path_factory.mktemp("web-daemon"), anthropic.base_url) as running:
        yield running


@pytest.fixture(autouse=True)
def _clients_closed(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "daemon" in request.fixturenames:
        request.getfixturevalue("daemon").close_clients()


@pytest.fixture
def fake(anthropic: AnthropicFake) -> Iterator[AnthropicFake]:
    """The shared fake, with whatever a test left queued dropped after it."""
    yield anthropic
    anthropic.discard_pending()


def chromium_path() -> str | None:
    for candidate in CHROMIUM_PATHS:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    # Module scope: while it runs, Playwright's sync API holds an event loop running on
    # this thread, and any later test that starts one of its own (anyio.run) would fail.
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    path = chromium_path()
    problem = "no chromium binary (apt-get install chromium)" if path is None else ""
    if path is not None:
        try:
            launched = playwright.chromium.launch(
                executable_path=path, args=["--no-sandbox", "--disable-gpu"]
            )
        except Error as exc:
            problem = str(exc)
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"CI must start Chromium, and it could not: {problem}")
        pytest.skip(f"Chromium cannot be started here: {problem}")
    yield launched
    launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    where = Path(os.environ.get(ARTIFACTS_ENV) or Path(__file__).parent / "artifacts")
    where.mkdir(parents=True, exist_ok=True)
    return where
