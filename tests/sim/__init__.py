"""Deterministic scenarios and a seeded simulation of the replication core (no sockets, no threads)."""
