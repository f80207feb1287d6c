"""Benchmarks that print figures (never run as tests)."""
