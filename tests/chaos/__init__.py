"""The fault campaign against the packaged collector (pytest: fast subset; chaos.py: full)."""
