"""Files fetched from the fake's file endpoint in chunks: whole, or cut off past the
limit while reading, and no error text carries the URL (it holds the token)."""

from __future__ import annotations

import secrets
from http.server import BaseHTTPRequestHandler

import pytest

from tests.fakes.loopback_http import serving
from tests.fakes.telegram_api import TelegramFake
from thalos_bot.channels.intake.downloads import DownloadError, FileDownloads
from thalos_bot.media.limits import TELEGRAM_DOWNLOAD_LIMIT

pytestmark = pytest.mark.anyio

TOKEN = "123456:TEST-" + secrets.token_hex(16)


async def test_a_file_arrives_whole() -> None:
    data = secrets.token_bytes(300_000)  # many chunks
    with TelegramFake(TOKEN) as fake:
        fake.push_document(7, 7, data, file_name="a.bin", mime_type="text/plain")
        async with FileDownloads(5.0, limit=TELEGRAM_DOWNLOAD_LIMIT) as downloads:
            assert await downloads.fetch(f"{fake.base_url}/file/bot{TOKEN}/files/doc-1") == data
        assert fake.files.downloads == ["files/doc-1"]


async def test_more_than_the_limit_is_cut_off_while_reading() -> None:
    with TelegramFake(TOKEN) as fake:
        fake.push_document(7, 7, b"x" * 50_000, file_name="a.txt", mime_type="text/plain")
        async with FileDownloads(5.0, limit=10_000) as downloads:
            with pytest.raises(DownloadError) as error:
                await downloads.fetch(f"{fake.base_url}/file/bot{TOKEN}/files/doc-1")
    assert error.value.too_big


async def test_a_refused_download_names_the_status_and_never_the_url() -> None:
    with TelegramFake(TOKEN) as fake:
        async with FileDownloads(5.0, limit=TELEGRAM_DOWNLOAD_LIMIT) as downloads:
            with pytest.raises(DownloadError) as error:
                await downloads.fetch(f"{fake.base_url}/file/bot{TOKEN}/files/none")
    assert error.value.reason.startswith("HTTP 4")
    assert not error.value.too_big
    assert TOKEN not in str(error.value)
    assert error.value.__cause__ is None


class _TooLarge(BaseHTTPRequestHandler):
    """A host that refuses every download as too large (413), as a homeserver does past
    its own media limit."""

    def do_GET(self) -> None:
        body = b'{"errcode":"M_TOO_LARGE"}'
        self.send_response(413)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


async def test_a_host_refusing_the_file_as_too_large_is_a_file_too_big() -> None:
    with serving(_TooLarge) as url:
        async with FileDownloads(5.0, limit=TELEGRAM_DOWNLOAD_LIMIT) as downloads:
            with pytest.raises(DownloadError) as error:
                await downloads.fetch(f"{url}/media/big")
    assert error.value.reason == "HTTP 413"
    assert error.value.too_big
