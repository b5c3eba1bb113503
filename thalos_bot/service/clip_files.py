"""A spoken answer's clips, kept until their channel has them: the audio in the state
folder, and the rest of each clip in its outbox row (a ``voice`` row).

A clip's row is written once its audio is on disk (``<state>/voice-clips/<row>.<ext>``,
written to a temporary name and renamed, so a file is whole or absent); the row's text
is the clip's description (:func:`describe`): media type, duration, part and parts,
waveform and the file's name. Row keys are the turn's own (the key of its answer's
row) with the part's number, so a clip written again after a crash adds nothing. The
file goes when its row is delivered or refused; a pruning removes any file whose row is
no longer pending (a crash between the two).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path

import structlog

from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import SessionId

log = structlog.get_logger(__name__)

FOLDER = "voice-clips"


def clip_key(turn: str, clip: VoiceClip) -> str:
    """The row key of a turn's clip: the turn's answer row, and the part."""
    return f"{turn}-voice-{clip.part}"


def describe(clip: VoiceClip, file: str) -> str:
    """A clip's row text: everything of it but the audio, which is in ``file``."""
    return json.dumps(
        {
            "file": file,
            "session": clip.session_id,
            "media_type": clip.media_type,
            "duration": clip.duration,
            "part": clip.part,
            "parts": clip.parts,
            "waveform": list(clip.waveform),
        },
        sort_keys=True,
    )


class ClipFiles:
    """The clips' audio, one file per outbox row, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def in_state(cls, state_dir: Path) -> ClipFiles:
        return cls(state_dir / FOLDER)

    def write(self, row_id: str, clip: VoiceClip) -> str:
        """Keep ``clip``'s audio for the row ``row_id``; the row's text."""
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{row_id}.{clip.name.rsplit('.', 1)[-1]}"
        target = self.folder / name
        partial = self.folder / f".{name}.part"
        with partial.open("wb") as out:
            out.write(clip.data)
            out.flush()
            os.fsync(out.fileno())
        partial.replace(target)
        return describe(clip, name)

    def read(self, row_id: str, text: str) -> VoiceClip | None:
        """The clip a row describes, its audio read back (None: the file or the
        description is gone or unreadable, logged)."""
        try:
            fields = json.loads(text)
            name = str(fields["file"])
            data = (self.folder / Path(name).name).read_bytes()
            duration = fields.get("duration")
            return VoiceClip(
                SessionId(str(fields.get("session", ""))),
                str(fields["media_type"]),
                data,
                float(duration) if isinstance(duration, int | float) else None,
                int(fields.get("part", 1)),
                int(fields.get("parts", 1)),
                tuple(int(v) for v in fields.get("waveform", ())),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("voice_clip_unreadable", row=row_id, problem=type(exc).__name__)
            return None

    def remove(self, row_id: str) -> None:
        for path in self._files_of(row_id):
            path.unlink(missing_ok=True)

    def names(self) -> dict[str, Path]:
        """Every kept file, by the row it belongs to."""
        if not self.folder.is_dir():
            return {}
        return {
            path.name.rsplit(".", 1)[0]: path
            for path in self.folder.iterdir()
            if path.is_file() and not path.name.startswith(".")
        }

    def remove_all_but(self, kept: Collection[str], among: dict[str, Path]) -> int:
        """Remove the files of ``among`` whose row is not in ``kept``; how many."""
        removed = 0
        for row_id, path in among.items():
            if row_id not in kept:
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def _files_of(self, row_id: str) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return [p for p in self.folder.glob(f"{row_id}.*") if p.is_file()]
