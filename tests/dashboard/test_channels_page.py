"""The channels page: each channel up or down, with its last poll or event and last
error, escaped; no login, no page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.dashboard.host import GUEST, client, host_deps, pair
from thalos_bot.channels.health import ChannelHealth
from thalos_bot.dashboard.channels import ConnectionRow, channel_rows

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _clock() -> datetime:
    return NOW


def test_a_channel_is_up_while_it_receives_and_down_while_it_retries() -> None:
    working = pair(
        "telegram", "telegram: polling as @bot", ChannelHealth(NOW - timedelta(minutes=2))
    )
    failing = pair(
        "matrix",
        health=ChannelHealth(
            NOW - timedelta(hours=1), "cannot reach the homeserver", NOW - timedelta(minutes=5)
        ),
    )
    starting = pair("web", receiving=False)
    rows = channel_rows([working, failing, starting])
    assert [(row.name, row.up) for row in rows] == [
        ("telegram", True),
        ("matrix", False),
        ("web", False),
    ]
    assert rows[0].describe == "telegram: polling as @bot"
    assert rows[1].describe == "matrix"
    assert rows[1].last_error == "cannot reach the homeserver"


def test_the_page_shows_state_times_and_escaped_errors() -> None:
    failing = pair(
        "telegram",
        "telegram <b>bot</b>",
        ChannelHealth(
            NOW - timedelta(hours=2), '<script>alert("x")</script>', NOW - timedelta(minutes=3)
        ),
    )
    deps = host_deps(channels=lambda: [failing], clock=_clock)
    response = client(deps).get("/dashboard/")
    assert response.status_code == 200
    body = response.text
    assert "<script>" not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert "telegram &lt;b&gt;bot&lt;/b&gt;" in body
    assert ">down<" in body
    assert "2026-12-01 10:00 UTC" in body
    assert "(2 hours ago)" in body
    assert "(3 minutes ago)" in body


def test_no_principal_no_page_and_no_stylesheet() -> None:
    deps = host_deps(channels=lambda: [pair("telegram")])
    anonymous = client(deps, principal=None)
    for path in ("/dashboard/", "/dashboard/static/dashboard.css"):
        response = anonymous.get(path)
        assert response.status_code == 401
        assert "telegram" not in response.text


def test_pages_link_only_the_package_stylesheet_and_carry_no_inline_script_or_style() -> None:
    body = client(host_deps(), GUEST).get("/dashboard/").text
    assert '<link rel="stylesheet" href="/dashboard/static/dashboard.css">' in body
    assert "<script" not in body
    assert "<style" not in body
    assert " style=" not in body
    css = client(host_deps(), GUEST).get("/dashboard/static/dashboard.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert "nav ul" in css.text


def test_no_channels_says_so() -> None:
    assert "No channels are open." in client(host_deps()).get("/dashboard/").text


def test_on_replicas_the_page_shows_who_owns_each_connection() -> None:
    rows = [
        ConnectionRow(
            "discord", "host-b:4242", NOW - timedelta(minutes=5), NOW - timedelta(minutes=5)
        ),
        ConnectionRow("matrix", "host-a:<i>7</i>", NOW - timedelta(hours=1), None),
        ConnectionRow("slack", None, NOW - timedelta(hours=2), None),
    ]

    async def connections() -> list[ConnectionRow]:
        return rows

    body = client(host_deps(connections=connections, clock=_clock)).get("/dashboard/").text
    assert "Connections among replicas" in body
    assert "host-b:4242" in body
    assert "host-a:&lt;i&gt;7&lt;/i&gt;" in body  # escaped
    assert "nobody (lease ran out)" in body
    assert body.count(">never<") == 2
    assert "(5 minutes ago)" in body


def test_one_process_shows_no_connections_table() -> None:
    assert "Connections among replicas" not in client(host_deps()).get("/dashboard/").text
