"""A streamed Discord answer over the fake: how it paces, and what it costs.

    python bench/discord_stream.py [--chars 3000] [--delta 8] [--pace 0.01] [--limit 5]
                                   [--window 5]

The real plug-in, discord.py, pump and runtime against the Discord fake (loopback). The
scripted model streams ``--chars`` characters in deltas of ``--delta`` every ``--pace``
seconds. Printed: seconds until the first text showed and until the final was complete,
the writes (posts, edits) the answer took, the most writes in any ``--window`` seconds
(the per-channel bucket allows ``--limit``), 429s received and bucket violations.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import anyio

from tests.discord.harness import World, running_bot
from tests.fakes.discord_api import DiscordFake
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot_discord import TOKEN_ENV


async def main(args: argparse.Namespace) -> None:
    text = " ".join(f"word{i}" for i in range(args.chars // 6))[: args.chars]
    deltas = [text[i : i + args.delta] for i in range(0, len(text), args.delta)]
    with (
        DiscordFake(edits_per_window=args.limit, window=args.window) as fake,
        tempfile.TemporaryDirectory() as state,
    ):
        os.environ[TOKEN_ENV] = fake.token
        world = World.of(fake, Path(state))
        provider = ScriptedProvider([[Say(*deltas, delay=args.pace)]])
        async with running_bot(
            fake, world, provider, edits_per_window=args.limit, edit_window=args.window
        ) as bot:
            start = time.monotonic()
            fake.say_dm(world.owner, "go")
            await fake.wait_for(lambda: fake.texts(bot.dm()), 60)
            first = time.monotonic() - start
            whole = text.replace(" ", "")
            await fake.wait_for(
                lambda: "".join(fake.texts(bot.dm())).replace(" ", "").replace("\n", "") == whole,
                120,
            )
            done = time.monotonic() - start
        writes = [
            t
            for route, major, t in fake.rest.timed
            if major == str(bot.dm()) and "messages" in route
        ]
    busiest = max(sum(1 for u in writes if t <= u < t + args.window) for t in writes)
    print(f"first text after     {first:.2f} s")
    print(f"final complete after {done:.2f} s ({len(fake.texts(bot.dm()))} message(s))")
    print(
        f"writes               {len(writes)} "
        f"(most in any {args.window:g} s: {busiest}; bucket {args.limit})"
    )
    print(f"429s                 {len(fake.limits.refused)}")
    print(f"violations           {len(fake.limits.violations)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--chars", type=int, default=3000)
    parser.add_argument("--delta", type=int, default=8)
    parser.add_argument("--pace", type=float, default=0.01)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--window", type=float, default=5.0)
    anyio.run(main, parser.parse_args())
