"""Media that people send: the content-addressed store, image and document checks,
and voice transcription."""
