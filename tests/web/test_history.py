"""The web conversation's kept history: what a page opened after a restart is shown."""

from __future__ import annotations

import stat
from pathlib import Path

from thalos_bot.domain.ids import ConversationId
from thalos_bot_web.history import History, Kept

ANN = ConversationId("ann")


def turn(history: History, n: int) -> None:
    history.note(ANN, Kept("user", {"html": f"q{n}", "files": []}))
    history.note(ANN, Kept("turn", {"turn": f"t{n}"}))
    history.note(ANN, Kept("partial", {"turn": f"t{n}", "html": "a"}, f"t{n}"))
    history.note(ANN, Kept("activity", {"turn": f"t{n}", "text": "using fs"}))
    history.note(ANN, Kept("final", {"turn": f"t{n}", "html": f"a{n}"}, f"t{n}"))


def test_finished_turns_are_kept_without_their_partials(tmp_path: Path) -> None:
    history = History(tmp_path / "web", keep=50)
    turn(history, 1)
    history.note(ANN, Kept("image", {"url": "/media/k", "caption": "chart"}))
    kinds = [k.kind for k in History(tmp_path / "web", keep=50).load(ANN)]
    assert kinds == ["user", "turn", "activity", "final", "image"]
    (image,) = [k for k in History(tmp_path / "web", keep=50).load(ANN) if k.kind == "image"]
    assert image.data == {"url": "", "caption": "chart"}, "the bytes went with the process"
    (path,) = (tmp_path / "web").iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "ann" not in path.name, "the file is named by a digest"


def test_a_turn_cut_off_by_a_restart_leaves_nothing_half_shown(tmp_path: Path) -> None:
    history = History(tmp_path / "web", keep=50)
    history.note(ANN, Kept("user", {"html": "q", "files": []}))
    history.note(ANN, Kept("turn", {"turn": "t"}))
    history.note(ANN, Kept("activity", {"turn": "t", "text": "using fs"}))
    assert [k.kind for k in History(tmp_path / "web", keep=50).load(ANN)] == ["user"]


def test_the_file_stays_bounded_and_keeps_whole_turns(tmp_path: Path) -> None:
    history = History(tmp_path / "web", keep=50)
    for n in range(100):
        turn(history, n)
    (path,) = (tmp_path / "web").iterdir()
    assert len(path.read_text().splitlines()) <= 100
    kept = History(tmp_path / "web", keep=50).load(ANN)
    assert kept[-1].data["html"] == "a99"
    placed = {k.data["turn"] for k in kept if k.kind == "turn"}
    assert all(k.turn in placed for k in kept if k.kind == "final")
