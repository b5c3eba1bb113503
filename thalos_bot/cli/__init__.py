"""The ``thalos-bot`` command line."""
