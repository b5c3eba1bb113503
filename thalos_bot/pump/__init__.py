"""The channel pump: commands, the conversation lifecycle, the flush cadence."""
