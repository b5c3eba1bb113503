"""Schedules: next run and last result over a real SQLite store; pause, resume and
cancel buttons for the owner only, each a POST carrying the host's CSRF token; a POST
without the token, with a forged one, or from another principal changes nothing."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.dashboard.host import GUEST, OWNER, Served, host_deps, serving, token_for
from tests.subagents.conftest import ALICE
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.schedules import schedule_rows
from thalos_bot.domain.address import Address
from thalos_bot.domain.schedule import Schedule
from thalos_bot.schedules.store import NewSchedule, ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database

NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
CHAT = Address.parse("telegram:42")
HOSTILE = '<img src=x onerror="alert(1)">'


async def _fill(db: Database) -> ScheduleStore:
    store = ScheduleStore(db)
    await store.create(
        NewSchedule(
            ALICE, "researcher", f"Report {HOSTILE}", CHAT, cron="0 9 * * *", id="sch_daily"
        ),
        NOW,
    )
    await store.create(
        NewSchedule(ALICE, "researcher", "Ping.", CHAT, at=NOW + timedelta(hours=2), id="sch_once"),
        NOW,
    )
    await store.create(
        NewSchedule(ALICE, "researcher", "Old.", CHAT, cron="0 10 * * *", id="sch_paused"), NOW
    )
    await store.pause("sch_paused")
    await store.finish("sch_daily", f"failed: {HOSTILE}", NOW - timedelta(hours=1))
    return store


@pytest.mark.anyio
async def test_the_rows_carry_next_run_last_result_and_what_can_be_done(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "t.db", migrations=ALL_MIGRATIONS) as db:
        rows = await schedule_rows(await _fill(db))
    assert [(r.id, r.state, r.actions) for r in rows] == [
        ("sch_daily", "active", ("pause", "cancel")),
        ("sch_once", "active", ("pause", "cancel")),
        ("sch_paused", "paused", ("resume", "cancel")),
    ]
    assert rows[0].next_run == datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert rows[0].last_result == f"failed: {HOSTILE}"
    assert rows[1].last_result is None


def _get(served: Served, schedule_id: str) -> Schedule:
    store = ScheduleStore(served.database)
    found = served.run(lambda: store.get(schedule_id))
    assert found is not None
    return found


def test_the_owner_sees_buttons_with_the_token_and_everything_escaped(tmp_path: Path) -> None:
    with serving(tmp_path / "t.db", _deps) as served:
        body = served.client.get("/dashboard/schedules").text
    assert "<img" not in body
    assert "Report &lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in body
    assert "failed: &lt;img" in body
    forms = re.findall(r'<form method="post" action="([^"]+)"', body)
    assert forms == [
        "/dashboard/schedules/sch_daily/pause",
        "/dashboard/schedules/sch_daily/cancel",
        "/dashboard/schedules/sch_once/pause",
        "/dashboard/schedules/sch_once/cancel",
        "/dashboard/schedules/sch_paused/resume",
        "/dashboard/schedules/sch_paused/cancel",
    ]
    tokens = re.findall(r'<input type="hidden" name="csrf_token" value="([^"]+)">', body)
    assert tokens == [token_for(OWNER)] * 6
    assert "2026-12-01 09:00 UTC" in body
    assert "(in 1 hour)" in body
    assert "not run yet" in body


async def _deps(db: Database) -> DashboardDeps:
    return host_deps(schedules=await _fill(db), clock=lambda: NOW)


def test_a_guest_sees_no_buttons_and_cannot_post(tmp_path: Path) -> None:
    with serving(tmp_path / "t.db", _deps, GUEST) as served:
        body = served.client.get("/dashboard/schedules").text
        assert "<form" not in body
        assert "csrf_token" not in body
        assert "Only the owner can pause, resume or cancel." in body
        refused = served.client.post(
            "/dashboard/schedules/sch_daily/cancel", data={"csrf_token": token_for(GUEST)}
        )
        assert refused.status_code == 403
        assert _get(served, "sch_daily").state == "active"
        assert (
            served.as_(None)
            .client.post(
                "/dashboard/schedules/sch_daily/cancel", data={"csrf_token": token_for(OWNER)}
            )
            .status_code
            == 401
        )
        assert _get(served, "sch_daily").state == "active"


def test_a_post_without_the_token_or_with_a_forged_one_changes_nothing(tmp_path: Path) -> None:
    woken: list[str] = []

    async def deps(db: Database) -> DashboardDeps:
        return host_deps(
            schedules=await _fill(db),
            clock=lambda: NOW,
            on_schedule_change=lambda: woken.append("wake"),
        )

    with serving(tmp_path / "t.db", deps) as served, capture_logs() as logs:
        for data in ({}, {"csrf_token": "forged"}, {"csrf_token": token_for(GUEST)}):
            response = served.client.post("/dashboard/schedules/sch_daily/pause", data=data)
            assert response.status_code == 403
            assert "reload the page" in response.text
        assert _get(served, "sch_daily").state == "active"
    assert woken == []
    assert [e["event"] for e in logs].count("dashboard_csrf_refused") == 3


def test_the_owner_pauses_resumes_and_cancels(tmp_path: Path) -> None:
    woken: list[str] = []

    async def deps(db: Database) -> DashboardDeps:
        return host_deps(
            schedules=await _fill(db),
            clock=lambda: NOW,
            on_schedule_change=lambda: woken.append("wake"),
        )

    token = {"csrf_token": token_for(OWNER)}
    with serving(tmp_path / "t.db", deps) as served:
        paused = served.client.post("/dashboard/schedules/sch_daily/pause", data=token)
        assert paused.status_code == 303
        assert paused.headers["location"].startswith("/dashboard/schedules?outcome=done")
        assert _get(served, "sch_daily").state == "paused"
        shown = served.client.get(paused.headers["location"]).text
        assert "Paused sch_daily." in shown
        again = served.client.post("/dashboard/schedules/sch_daily/pause", data=token)
        assert "outcome=refused" in again.headers["location"]
        assert "Could not pause sch_daily" in served.client.get(again.headers["location"]).text
        served.client.post("/dashboard/schedules/sch_daily/resume", data=token)
        resumed = _get(served, "sch_daily")
        assert (resumed.state, resumed.next_run) == ("active", datetime(2026, 12, 1, 9, tzinfo=UTC))
        served.client.post("/dashboard/schedules/sch_once/cancel", data=token)
        assert _get(served, "sch_once").state == "cancelled"
        assert "sch_once" not in served.client.get("/dashboard/schedules").text
        unknown = served.client.post("/dashboard/schedules/sch_daily/explode", data=token)
        assert unknown.status_code == 404
    assert woken == ["wake", "wake", "wake"]


def test_the_notice_after_an_action_escapes_what_the_query_says(tmp_path: Path) -> None:
    with serving(tmp_path / "t.db", _deps) as served:
        body = served.client.get(
            "/dashboard/schedules", params={"outcome": "done", "action": "pause", "id": HOSTILE}
        ).text
        odd = served.client.get(
            "/dashboard/schedules", params={"outcome": "done", "action": "<b>x</b>", "id": "a"}
        ).text
    assert "<img" not in body
    assert "Paused &lt;img src=x onerror=&quot;alert(1)&quot;&gt;." in body
    assert 'role="status"' not in odd  # an unknown action says nothing
