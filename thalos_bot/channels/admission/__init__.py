"""Who gets in: allowlists (:mod:`.allowlist`), pairing codes that add the person setting
a bot up (:mod:`.pairing`), mention gating in groups (:mod:`.mentions`), and the guard
that keeps one bad update from ending the daemon (:mod:`.guard`)."""
