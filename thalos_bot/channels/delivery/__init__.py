"""Delivery machinery every transport reuses: what a failed call means
(:mod:`.failure`); what a chat should show for an answer and the next call to get there,
the final shown exactly once (:mod:`.view`); one chat's queue (:mod:`.outbox`) of
answers, notices, tool images (:mod:`.photo`) and approval questions
(:mod:`.question`); the outbox row's journal across restarts (:mod:`.journal`); and the
highest message ids known (:mod:`.markbook`). A transport's sender makes the calls."""
