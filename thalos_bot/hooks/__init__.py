"""Webhooks in: signed deliveries from another program start one run each."""
