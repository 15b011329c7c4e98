"""Receiver measurements with the real collector process (receiver_bench.py)."""
