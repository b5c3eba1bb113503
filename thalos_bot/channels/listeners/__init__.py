"""What every HTTP listener the daemon opens shares: the per-address rate limit."""
