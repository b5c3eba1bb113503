"""A file as a platform's event claims it (:meth:`RemoteFile.claimed`): a claim of the
wrong type is unknown, never taken for something it is not."""

from __future__ import annotations

from thalos_bot.channels.intake.files import RemoteFile


def test_a_size_or_type_of_another_kind_is_unknown() -> None:
    file = RemoteFile.claimed("u", "x:1", "a.bin", size=True, mime=7)
    assert (file.size, file.mime_type, file.kind) == (None, None, "document")


def test_audio_is_transcribed_its_type_without_parameters() -> None:
    file = RemoteFile.claimed("u", "x:2", "a.ogg", size=12, mime="Audio/OGG; codecs=opus")
    assert (file.size, file.mime_type, file.kind) == (12, "Audio/OGG", "audio")
    voice = RemoteFile.claimed("u", "x:3", "voice.ogg", size=None, mime="", voice=True)
    assert (voice.mime_type, voice.kind) == (None, "voice")
