"""Skills: SKILL.md procedures synced from files, a per-turn catalogue, and tools.

- :mod:`~thalos_bot.skills.grammar` (with ``frontmatter`` and ``document``): one file to a
  :class:`~thalos_bot.skills.document.SkillDocument` or a load error;
- :mod:`~thalos_bot.skills.discovery`: roots scanned one level deep, first root wins;
- :mod:`~thalos_bot.skills.sync`: ``sync_skills`` at start-up, files to the store;
- :mod:`~thalos_bot.skills.store` and ``schema``: SQLite rows and the FTS5 index;
- :mod:`~thalos_bot.skills.catalogue`: the ``<skills>`` block each turn;
- :mod:`~thalos_bot.skills.source`: ``skills__load`` and ``skills__search``;
- :mod:`~thalos_bot.skills.escape`: defusing ``<skill`` spellings in skill text.
"""
