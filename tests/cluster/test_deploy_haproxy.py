"""The shipped HAProxy example is a configuration HAProxy accepts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cluster.processes import haproxy_binary

CERT = "/etc/haproxy/certs/bot.example.com.pem"
EXAMPLE = Path(__file__).parents[2] / "deploy" / "haproxy.cfg"


def test_the_example_haproxy_config_is_valid(tmp_path: Path) -> None:
    # The only part a test machine cannot have: the certificate. Everything else as shipped.
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "option httpchk GET /readyz" in text
    copy = tmp_path / "haproxy.cfg"
    copy.write_text(
        text.replace(f"bind :443 ssl crt {CERT}", "bind 127.0.0.1:18443"),
        encoding="utf-8",
    )
    result = subprocess.run(
        [haproxy_binary(), "-c", "-f", str(copy)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
