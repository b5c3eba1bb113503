"""One real Synapse per test session, shared by every test under tests/matrix."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.matrix.synapse import SYNAPSE_HOME, SynapseServer, SynapseStartError, installed


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynapseServer]:
    """A healthy Synapse on 127.0.0.1 (see synapse.py for what its config allows).

    Skipped only on a developer's machine where `tests/matrix/setup-synapse` was never run;
    under CI (CI=true) a missing install is a failure, as is any failure to start, which
    reports Synapse's log tail.
    """
    if not installed():
        message = f"Synapse is not installed in {SYNAPSE_HOME}: run `bash tests/matrix/setup-synapse`"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    server = SynapseServer(tmp_path_factory.mktemp("synapse"))
    try:
        server.start()
    except SynapseStartError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.stop()
