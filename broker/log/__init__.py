"""Segmented partition logs, recovery, checkpoints and the leader-epoch cache (no asyncio, no sockets)."""
