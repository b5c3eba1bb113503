"""Several replicas over one PostgreSQL store: the webhook inbox, conversation leases
with fencing tokens, and the table of live replicas (see docs/replicas.md, "Running several
replicas"). Nothing here runs on SQLite: one process needs none of it."""
