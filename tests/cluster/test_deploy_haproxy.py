"""The shipped HAProxy example is a configuration HAProxy accepts, and it routes each
path where the docs say: Telegram's webhook to the webhook listeners, everything else
(the page, its event stream, the API, the [[hooks]]) to the web listeners."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.cluster.processes import haproxy_binary
from tests.ports import free_port

CERT = "/etc/haproxy/certs/bot.example.com.pem"
EXAMPLE = Path(__file__).parents[2] / "deploy" / "haproxy.cfg"


def shipped(bind: str) -> str:
    # The only part a test machine cannot have: the certificate. Everything else as shipped.
    text = EXAMPLE.read_text(encoding="utf-8")
    assert f"bind :443 ssl crt {CERT}" in text
    return text.replace(f"bind :443 ssl crt {CERT}", f"bind {bind}")


def test_the_example_haproxy_config_is_valid(tmp_path: Path) -> None:
    text = shipped("127.0.0.1:18443")
    assert "option httpchk GET /readyz" in text
    copy = tmp_path / "haproxy.cfg"
    copy.write_text(text, encoding="utf-8")
    result = subprocess.run(
        [haproxy_binary(), "-c", "-f", str(copy)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


class Listener(BaseHTTPRequestHandler):
    """A replica's listener that says which one it is, and what the balancer added."""

    name = ""

    def _answer(self) -> None:
        body = (
            f"{self.name} {self.path} {self.headers.get('X-Forwarded-Proto', '-')}"
            f" {self.headers.get('X-Forwarded-For', '-')}"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815 - the names http.server calls

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        return


def serving(name: str) -> tuple[ThreadingHTTPServer, int]:
    handler = type(f"{name}_listener", (Listener,), {"name": name})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, int(server.server_address[1])


@pytest.fixture(scope="module")
def balancer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The shipped config, its three replicas' two listeners standing in one server
    each (webhook, which answers /readyz too; web), shared by the module's cases."""
    tmp_path = tmp_path_factory.mktemp("haproxy")
    webhook, webhook_port = serving("webhook")
    web, web_port = serving("web")
    port = free_port()
    text = shipped(f"127.0.0.1:{port}")
    text = re.sub(r"10\.0\.0\.1\d:8081", f"127.0.0.1:{webhook_port}", text)
    text = re.sub(r"10\.0\.0\.1\d:8765", f"127.0.0.1:{web_port}", text)
    text = text.replace("log global", "").replace("log /dev/log local0", "")
    copy = tmp_path / "haproxy.cfg"
    copy.write_text(text, encoding="utf-8")
    process = subprocess.Popen(
        [haproxy_binary(), "-db", "-f", str(copy)], stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while True:  # until the health checks let the webhook servers in
            try:
                if httpx.post(f"http://127.0.0.1:{port}/telegram").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "HAProxy never served"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        for server in (webhook, web):
            server.shutdown()
            server.server_close()


@pytest.mark.parametrize(
    ("path", "listener"),
    [
        ("/telegram", "webhook"),
        ("/", "web"),
        ("/login", "web"),
        ("/static/app.js", "web"),
        ("/api/events", "web"),
        ("/v1/models", "web"),
        ("/hooks/deploy", "web"),
        ("/dashboard/", "web"),
    ],
)
def test_each_path_reaches_its_listener(balancer: str, path: str, listener: str) -> None:
    answer = httpx.get(balancer + path)
    assert answer.status_code == 200, answer.text
    name, seen, proto, forwarded = answer.text.split(" ")
    assert (name, seen) == (listener, path)
    if listener == "web":  # believed by the web channel from its forwarded_allow_ips
        assert (proto, forwarded) == ("https", "127.0.0.1")


def test_the_webhook_listeners_health_checks_stay_internal(balancer: str) -> None:
    for path in ("/readyz", "/healthz"):
        assert httpx.get(balancer + path).text.split(" ")[0] != "webhook"
