"""The ports a transport plug-in implements, and where each is written down.

A transport (``channels/<name>/``) holds only what is its own, and hands the kit:

1. **A manifest** (:mod:`thalos_bot.channels.manifest`): its config model, the
   environment it needs, a summary, its reading of a conversation id for the kit's
   allowlist, and where its doctor checks and runtime live; importable without the
   platform SDK. The entry point names it.
2. **A wire** (:mod:`thalos_bot.channels.delivery.wire`): the platform's verbs (send,
   edit, upload, typing; find where sends are looked up), its error classifier onto
   :class:`~thalos_bot.channels.delivery.failure.Failure`, its dialect, and its limits as
   data. The kit's engine (:mod:`thalos_bot.channels.delivery.engine`,
   :mod:`thalos_bot.channels.delivery.channel`) does everything else: outboxes, previews
   and finals, splitting, pacing, retry-after, the send-in-doubt check, the journal.
3. **Its receiving side**: events decoded into
   :class:`~thalos_bot.channels.ports.InboundMessage` and handed to an
   :class:`~thalos_bot.channels.inlet.Inlet` (the source the pump reads), with the kit's
   admission (mentions, pairing, the guard) and intake (attachments).
4. **How an approval is shown and read** on its platform; the flow is the kit's
   (:mod:`thalos_bot.channels.approvals.asking`).

``docs/writing-a-transport.md`` is the tour; the contract suite in
``tests/channels/contract/`` is the definition of "a transport works".
"""
