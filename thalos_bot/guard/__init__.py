"""The result guard: what a tool returns, and what memory recalls, is read by the model
only after :class:`~thalos_bot.guard.guard.ResultGuard` has screened it."""
