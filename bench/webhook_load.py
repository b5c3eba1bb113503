"""A webhook load generator in a process of its own (so it never shares the listener's
event loop): POSTs ``--count`` Telegram updates to ``--url`` at ``--rate`` a second,
open loop (each on its schedule, whether or not earlier ones were answered), over at
most ``--connections`` keep-alive connections as Telegram's ``max_connections`` does,
and prints one JSON line: the answer times (seconds) and the status counts.

    python bench/webhook_load.py --url http://127.0.0.1:PORT/telegram --rate 300 \\
        --count 1500 --secret S --first-id 1

Loopback only; bounded by ``--count`` and a 60 s cap.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import anyio
import httpx

USERS = list(range(5000, 5100))
CAP_S = 60.0


def update(update_id: int, user: int | None = None) -> dict[str, object]:
    """A private text message's update (from one of :data:`USERS` unless ``user``)."""
    user = USERS[update_id % len(USERS)] if user is None else user
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1_700_000_000,
            "chat": {"id": user, "type": "private", "first_name": "B"},
            "from": {"id": user, "is_bot": False, "first_name": "B"},
            "text": f"m{update_id}",
        },
    }


async def run(args: argparse.Namespace) -> None:
    if not args.url.startswith(("http://127.", "http://localhost")):
        sys.exit("webhook_load: loopback addresses only")
    answers: list[float] = []
    statuses: dict[str, int] = {}
    limits = httpx.Limits(
        max_connections=args.connections, max_keepalive_connections=args.connections
    )
    bodies = [json.dumps(update(args.first_id + i)).encode() for i in range(args.count)]
    headers = {"X-Telegram-Bot-Api-Secret-Token": args.secret, "Content-Type": "application/json"}
    async with httpx.AsyncClient(limits=limits, timeout=10) as client:

        async def post(body: bytes) -> None:
            began = time.monotonic()
            try:
                answer = await client.post(args.url, content=body, headers=headers)
                code = str(answer.status_code)
            except httpx.HTTPError as exc:
                code = type(exc).__name__
            answers.append(time.monotonic() - began)
            statuses[code] = statuses.get(code, 0) + 1

        start = time.monotonic()
        with anyio.move_on_after(CAP_S):
            async with anyio.create_task_group() as group:
                for i, body in enumerate(bodies):
                    await anyio.sleep(max(0.0, start + i / args.rate - time.monotonic()))
                    group.start_soon(post, body)
    print(json.dumps({"answers": answers, "statuses": statuses}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--rate", type=float, default=300)
    parser.add_argument("--count", type=int, default=1500)
    parser.add_argument("--connections", type=int, default=40)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--first-id", type=int, default=1)
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
