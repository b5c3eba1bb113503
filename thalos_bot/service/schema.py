"""Every migration the daemon's database gets, in order: core, then each feature's."""

from __future__ import annotations

from thalos_bot.hooks.schema import HOOK_MIGRATIONS
from thalos_bot.media.schema import MEDIA_MIGRATIONS
from thalos_bot.memory.schema import MEMORY_MIGRATIONS
from thalos_bot.schedules.schema import SCHEDULE_MIGRATIONS
from thalos_bot.skills.schema import SKILLS_MIGRATIONS
from thalos_bot.storage.api_keys import API_CONVERSATION_MIGRATIONS, API_KEY_MIGRATIONS
from thalos_bot.storage.audit import AUDIT_MIGRATIONS
from thalos_bot.storage.chat_marks import CHAT_MARK_MIGRATIONS
from thalos_bot.storage.links import LINK_MIGRATIONS
from thalos_bot.storage.migrations import MIGRATIONS, Migration
from thalos_bot.storage.outbox import OUTBOX_MIGRATIONS
from thalos_bot.storage.pg.schema import PG_MIGRATIONS
from thalos_bot.storage.run_costs import RUN_COST_MIGRATIONS
from thalos_bot.storage.session_approvals import SESSION_APPROVAL_MIGRATIONS
from thalos_bot.storage.turn_journal import TURN_JOURNAL_MIGRATIONS
from thalos_bot.storage.usage import USAGE_MIGRATIONS
from thalos_bot.storage.voice_modes import VOICE_MIGRATIONS
from thalos_bot.storage.web_events import WEB_EVENT_MIGRATIONS
from thalos_bot.storage.web_logins import WEB_LOGIN_MIGRATIONS

ALL_MIGRATIONS: list[Migration] = [
    *MIGRATIONS,
    *MEMORY_MIGRATIONS,
    *SKILLS_MIGRATIONS,
    *USAGE_MIGRATIONS,
    *OUTBOX_MIGRATIONS,
    *CHAT_MARK_MIGRATIONS,
    *MEDIA_MIGRATIONS,
    *AUDIT_MIGRATIONS,
    *SESSION_APPROVAL_MIGRATIONS,
    *SCHEDULE_MIGRATIONS,
    *HOOK_MIGRATIONS,
    *LINK_MIGRATIONS,
    *VOICE_MIGRATIONS,
    *API_KEY_MIGRATIONS,
    *RUN_COST_MIGRATIONS,
    *API_CONVERSATION_MIGRATIONS,
    *TURN_JOURNAL_MIGRATIONS,
    *WEB_LOGIN_MIGRATIONS,
    *WEB_EVENT_MIGRATIONS,
]

PG_ALL_MIGRATIONS: list[Migration] = PG_MIGRATIONS
"""Every migration of the PostgreSQL store (the shared state of the replicas)."""
