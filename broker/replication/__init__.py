"""Replication: partition rules, replica manager, fetchers and delayed operations."""
