"""A tool's image, shown in the conversation with ``files.uploadV2``.

The SDK's ``files_upload_v2`` makes the three calls (``files.getUploadURLExternal``, the
upload itself, ``files.completeUploadExternal`` sharing it into the thread); each Web API
step is paced like every other call. A refused upload is logged, never retried: the
answer it belongs to is already out.
"""

from __future__ import annotations

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError, SlackRequestError

from thalos_bot.channels import notices
from thalos_bot.domain.events import ToolImage
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.client import SlackApi

log = structlog.get_logger(__name__)

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


async def upload_image(api: SlackApi, place: Place, image: ToolImage) -> None:
    name = f"{image.tool.replace('__', '-')}.{EXTENSIONS.get(image.media_type, 'bin')}"
    caption = notices.tool_image(image.tool, image.media_type, len(image.data))
    await api.pacer.acquire("files.getUploadURLExternal", "")
    await api.pacer.acquire("files.completeUploadExternal", place.channel)
    try:
        await api.client.files_upload_v2(
            channel=place.channel,
            thread_ts=place.thread_ts,
            filename=name,
            content=image.data,
            title=name,
            initial_comment=caption,
        )
    except SlackApiError as exc:
        log.warning("slack_image_refused", error=str(exc.response.get("error") or ""))
    except (TimeoutError, SlackRequestError, aiohttp.ClientError, OSError) as exc:
        log.warning("slack_image_not_sent", error=type(exc).__name__)
