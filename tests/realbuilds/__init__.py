"""Real ct-cake builds against the collector, compared with ct-cake's own export."""
