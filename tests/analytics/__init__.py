"""A build drawn as a timeline with its critical path (timeline.py)."""
