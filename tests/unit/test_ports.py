"""The tests' ports come from below the kernel's ephemeral range, a band per worker."""

from __future__ import annotations

import socket

import pytest

from tests import ports


def test_a_port_is_below_the_ephemeral_range_and_free() -> None:
    port = ports.free_port()
    assert ports.FLOOR <= port < ports._ephemeral_start()
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))  # raises if it were taken


def test_a_port_held_by_a_socket_is_never_given() -> None:
    band = ports._band()
    assert band is not None
    held: list[socket.socket] = []
    try:
        for port in band[:-1]:
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                sock.close()
                continue
            held.append(sock)
        given = ports.free_port()
        assert given not in {s.getsockname()[1] for s in held}
        assert given in band
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize("worker", ["gw0", "gw1", "gw7"])
def test_each_worker_has_its_own_band(monkeypatch: pytest.MonkeyPatch, worker: str) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    controller = ports._band()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    own = ports._band()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw" + str(int(worker[2:]) + 1))
    next_one = ports._band()
    assert controller is not None
    assert own is not None
    assert next_one is not None
    assert not set(own) & set(controller)
    assert not set(own) & set(next_one)
    assert max(own) < ports._ephemeral_start()


def test_a_worker_past_the_bands_shares_none(monkeypatch: pytest.MonkeyPatch) -> None:
    bands = (ports._ephemeral_start() - ports.FLOOR) // ports.BAND
    monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{bands - 1}")
    assert ports._band() is None
    monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{bands - 2}")
    last = ports._band()
    assert last is not None
    assert max(last) < ports._ephemeral_start()
