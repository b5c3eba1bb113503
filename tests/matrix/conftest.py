"""Real Synapse servers for tests/matrix: one shared per session, one rate-limited on demand."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.matrix.synapse import SYNAPSE_HOME, SynapseServer, SynapseStartError, installed

# The flood server's message limit: a burst of 3 actions, then one per 1000 s, so a 429 is
# certain after the burst whatever the machine's speed. (Creating a room spends one.)
FLOOD_RC_MESSAGE = {"per_second": 0.001, "burst_count": 3}


def _running(
    folder: Path, rc_message: dict[str, float] | None = None, *, push: bool = False
) -> Iterator[SynapseServer]:
    """Skipped only on a developer's machine where `tests/matrix/setup-synapse` was never run;
    under CI (CI=true) a missing install fails, as does any failure to start, which reports
    Synapse's log tail."""
    if not installed():
        message = (
            f"Synapse is not installed in {SYNAPSE_HOME}: run `bash tests/matrix/setup-synapse`"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    server = SynapseServer(folder, push=push)
    if rc_message is not None:
        server.rc_message = rc_message
    try:
        server.start()
    except SynapseStartError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynapseServer]:
    """A healthy Synapse on 127.0.0.1 with relaxed rate limits (see synapse.py)."""
    yield from _running(tmp_path_factory.mktemp("synapse"))


@pytest.fixture(scope="session")
def flood_synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynapseServer]:
    """A second Synapse whose rc_message is FLOOD_RC_MESSAGE, for real M_LIMIT_EXCEEDED."""
    yield from _running(tmp_path_factory.mktemp("synapse-flood"), FLOOD_RC_MESSAGE)


@pytest.fixture(scope="session")
def push_synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynapseServer]:
    """A Synapse that evaluates push rules (the shared one skips that work), to see whom
    an event notifies or highlights (``/notifications``)."""
    yield from _running(tmp_path_factory.mktemp("synapse-push"), push=True)
