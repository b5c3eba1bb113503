"""What every HTTP listener the daemon opens shares: the per-address rate limit, the
body caps, and the daemon's own apps served beside a transport's pages."""
