"""Skills: Agent Skills (``SKILL.md``) procedures synced from files, a per-turn catalogue,
and tools.

- :mod:`~thalos_bot.skills.grammar` (with ``frontmatter`` and ``document``): one file to a
  :class:`~thalos_bot.skills.document.SkillDocument`, or a load error listing every
  problem, by the Agent Skills specification;
- :mod:`~thalos_bot.skills.discovery`: roots scanned one level deep, first root wins,
  nothing outside a root read;
- :mod:`~thalos_bot.skills.sync`: ``sync_skills`` at start-up, files to the store;
- :mod:`~thalos_bot.skills.store` and ``schema``: SQLite rows and the FTS5 index;
- :mod:`~thalos_bot.skills.catalogue`: the ``<skills>`` block each turn;
- :mod:`~thalos_bot.skills.source`: ``skills__load``, ``skills__read``, ``skills__search``;
- :mod:`~thalos_bot.skills.resources`: a skill folder's files, listed and read, confined.

Text in every block is defused by :mod:`thalos_bot.domain.prompt_blocks`.
"""
