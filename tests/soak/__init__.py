"""The packaged collector for an hour with a build every second (soak.py)."""
