"""Every migration the daemon's database gets, in order: core, then each feature's."""

from __future__ import annotations

from thalos_bot.memory.schema import MEMORY_MIGRATIONS
from thalos_bot.schedules.schema import SCHEDULE_MIGRATIONS
from thalos_bot.skills.schema import SKILLS_MIGRATIONS
from thalos_bot.storage.migrations import MIGRATIONS, Migration

ALL_MIGRATIONS: list[Migration] = [
    *MIGRATIONS,
    *MEMORY_MIGRATIONS,
    *SKILLS_MIGRATIONS,
    *SCHEDULE_MIGRATIONS,
]
