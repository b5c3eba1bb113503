"""The channel's file source on the real Synapse: a file comes through the homeserver's
authenticated media with the bot's token, within the download limit; past it, or when
the homeserver has no such file, the person is told which (never the HTTP text)."""

from __future__ import annotations

import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot.channels.intake.files import FetchLimit, RemoteFile
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot_matrix.client import MatrixClient
from thalos_bot_matrix.inbound import LIMIT, MatrixFiles

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DATA = b"remember: milk\n" * 100


def file(ref: str, size: int | None = None) -> RemoteFile:
    return RemoteFile("document", ref, f"matrix:{ref}", size, "todo.txt", "text/plain")


async def test_a_file_is_fetched_within_the_limit_and_refused_past_it(
    synapse: SynapseServer,
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with Human(synapse, alice) as human:
        mxc = await human.upload(DATA, "text/plain", "todo.txt")
    client = MatrixClient(synapse.base_url, bot.access_token, timeout=10)
    fits, under = FetchLimit(len(DATA), LIMIT.source), FetchLimit(len(DATA) - 1, LIMIT.source)
    files, small = MatrixFiles(client, limit=fits), MatrixFiles(client, limit=under)
    not_downloaded = LIMIT.not_downloaded
    try:
        assert bytes(await files.fetch(file(mxc))) == DATA
        # The size the event claims is believed first; the bytes read are checked too.
        for source, claimed, notice in [
            (files, len(DATA) + 1, fits.too_big),
            (small, None, under.too_big),
            (files, None, not_downloaded),
        ]:
            ref = mxc if notice != not_downloaded else mxc + "gone"
            with pytest.raises(MediaRejectedError) as refused:
                await source.fetch(file(ref, claimed))
            assert refused.value.notice == notice
        with pytest.raises(MediaRejectedError) as malformed:
            await files.fetch(file("mxc://no-media-id"))
        assert malformed.value.notice == not_downloaded
    finally:
        await files.aclose()
        await small.aclose()
        await client.aclose()
