"""Domain types shared by every part of the daemon: ids, callers, events, errors, agents."""
