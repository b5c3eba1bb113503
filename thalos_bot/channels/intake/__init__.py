"""Intake of attachments: fetching them within the transport's limit
(:mod:`.downloads`), and turning a message with files into one
:class:`~thalos_bot.channels.ports.InboundMessage` whose attachments are in the media
store's form."""
