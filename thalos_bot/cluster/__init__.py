"""Several replicas over one PostgreSQL store: the webhook inbox and its drain by each
lane's lease holder, conversation leases with fencing tokens, and the table of live
replicas (see docs/replicas.md, "Running several replicas"). Nothing here runs on
SQLite: one process needs none of it."""
