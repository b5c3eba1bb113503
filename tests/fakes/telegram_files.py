"""Files users send, for the Telegram fake: ``getFile`` and the file download endpoint.

As on Telegram, ``getFile`` answers a File object with a ``file_path`` that is then
downloaded from ``<base_url>/file/bot<token>/<file_path>``; an unknown ``file_id`` is
``400 Bad Request: invalid file_id`` and a file over the 20 MB bot download limit is
``400 Bad Request: file is too big``. A file's bytes are registered by the test with
the message that carries it (see the ``push_photo`` / ``push_document`` / ``push_voice``
builders of :class:`~tests.fakes.telegram_api.TelegramFake`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from tests.fakes.telegram_wire import Json, bad_request, ok

DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""Bots can download files of up to 20 MB (Bot API, getFile)."""

FILE_PATH = re.compile(r"/file/bot([^/]+)/(.+)")


@dataclass(frozen=True)
class FakeFile:
    file_id: str
    file_unique_id: str
    data: bytes
    file_path: str
    size: int
    """What Telegram reports (a test may claim a size the bytes do not have)."""


class FileStore:
    def __init__(self) -> None:
        self._by_id: dict[str, FakeFile] = {}
        self._by_path: dict[str, FakeFile] = {}
        self.downloads: list[str] = []
        """File paths downloaded, in order."""
        self._omit_paths = 0
        self.served = threading.Event()
        """Cleared: a download waits until it is set again (a slow file server)."""
        self.served.set()
        self.asked = 0
        """Downloads asked for, served or still waiting."""

    def omit_path_next(self, times: int = 1) -> None:
        """The next ``times`` getFile answers carry no ``file_path``: the Bot API marks
        it optional, and a File without one cannot be downloaded."""
        self._omit_paths += times

    def add(self, file_id: str, unique_id: str, data: bytes, path: str, size: int) -> FakeFile:
        file = FakeFile(file_id, unique_id, data, path, size)
        self._by_id[file_id] = file
        self._by_path[path] = file
        return file

    def get_file(self, params: Json) -> Json:
        file_id = params.get("file_id")
        if not isinstance(file_id, str) or not file_id:
            raise bad_request("file_id is empty" if file_id in (None, "") else "invalid file_id")
        file = self._by_id.get(file_id)
        if file is None:
            raise bad_request("invalid file_id")
        if file.size > DOWNLOAD_LIMIT:
            raise bad_request("file is too big")
        answer: Json = {
            "file_id": file.file_id,
            "file_unique_id": file.file_unique_id,
            "file_size": file.size,
        }
        if self._omit_paths:
            self._omit_paths -= 1
        else:
            answer["file_path"] = file.file_path
        return ok(answer)

    def download(self, path: str) -> bytes | None:
        file = self._by_path.get(path)
        if file is None or file.size > DOWNLOAD_LIMIT:
            return None
        self.downloads.append(path)
        return file.data
