"""Builds through real delivery paths: agent -> gateway -> sink or Jaeger v2."""
