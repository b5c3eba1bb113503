"""The web conversation's kept history: what a page opened after a restart is shown."""

from __future__ import annotations

import stat
from pathlib import Path

from thalos_bot.domain.ids import ConversationId
from thalos_bot_web.history import History
from thalos_bot_web.timeline import Timeline

ANN = ConversationId("ann")


def followed(folder: Path, keep: int = 50) -> Timeline:
    timeline = Timeline(keep)
    History(folder).follow(ANN, timeline)
    return timeline


def turn(timeline: Timeline, n: int) -> None:
    timeline.append("user", {"html": f"q{n}", "files": []})
    timeline.append("turn", {"turn": f"t{n}"})
    timeline.append("partial", {"turn": f"t{n}", "html": "a"}, turn=f"t{n}")
    timeline.append("activity", {"turn": f"t{n}", "text": "using fs"})
    timeline.append("final", {"turn": f"t{n}", "html": f"a{n}"}, turn=f"t{n}")


def test_finished_turns_are_kept_without_their_partials(tmp_path: Path) -> None:
    timeline = followed(tmp_path / "web")
    turn(timeline, 1)
    timeline.append("image", {"url": "/media/k", "caption": "chart"})
    timeline.append("approval", {"id": "q", "tool": "fs", "preview": "x"})
    kinds = [k.kind for k in History(tmp_path / "web").load(ANN)]
    assert kinds == ["user", "turn", "activity", "final", "image"]
    (image,) = [k for k in History(tmp_path / "web").load(ANN) if k.kind == "image"]
    assert image.data == {"url": "", "caption": "chart"}, "the bytes went with the process"
    (path,) = (tmp_path / "web").iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "ann" not in path.name, "the file is named by a digest"


def test_a_turn_cut_off_by_a_restart_leaves_nothing_half_shown(tmp_path: Path) -> None:
    timeline = followed(tmp_path / "web")
    timeline.append("user", {"html": "q", "files": []})
    timeline.append("turn", {"turn": "t"})
    timeline.append("activity", {"turn": "t", "text": "using fs"})
    timeline.append("notice", {"html": "still working", "tone": "info"})
    kinds = [k.kind for k in History(tmp_path / "web").load(ANN)]
    assert kinds == ["user", "notice"]


def test_the_file_stays_bounded_and_keeps_whole_turns(tmp_path: Path) -> None:
    timeline = followed(tmp_path / "web", keep=50)
    for n in range(100):
        turn(timeline, n)
    (path,) = (tmp_path / "web").iterdir()
    assert len(path.read_text().splitlines()) <= 50
    kept = History(tmp_path / "web").load(ANN)
    assert kept[-1].data["html"] == "a99"
    placed = {k.data["turn"] for k in kept if k.kind == "turn"}
    assert all(k.turn in placed for k in kept if k.kind == "final")
    assert all(k.data["turn"] in placed for k in kept if k.kind == "activity")
