"""Tool approvals asked in a chat: the open questions, their answers and their
withdrawal (:mod:`.asking`), whatever the platform's way to answer: buttons
(:mod:`.buttons`), or a reaction or a reply (:mod:`.reactions`)."""
