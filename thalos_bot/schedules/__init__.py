"""Schedules: jobs that run as subagent runs at a time or on a cron, and deliver."""
