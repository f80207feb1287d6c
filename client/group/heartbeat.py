"""A group member's three clocks (Kafka's Heartbeat), pure: when to send the next heartbeat, whether the session has
gone without an answer from the coordinator for session.timeout.ms, and whether the application has gone without a
poll for max.poll.interval.ms. Every method takes the time now (ms)."""

from __future__ import annotations

from dataclasses import dataclass


def backoff_ms(retry_backoff_ms: int, retry_backoff_max_ms: int, attempts: int) -> float:
    """The wait before retry number `attempts` + 1: retry.backoff.ms doubled at each failed attempt, at most
    retry.backoff.max.ms (Kafka's ExponentialBackoff, without its jitter)."""
    if retry_backoff_ms >= retry_backoff_max_ms:
        return retry_backoff_max_ms
    return min(retry_backoff_ms * 2.0 ** min(attempts, 32), retry_backoff_max_ms)


@dataclass(slots=True)
class HeartbeatTimers:
    """The heartbeat, session and poll deadlines of one member."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    now: float
    next_heartbeat: float = 0.0
    session_deadline: float = 0.0
    poll_deadline: float = 0.0
    failed_attempts: int = 0

    def __post_init__(self) -> None:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat.interval.ms must be lower than session.timeout.ms")
        self.reset_timeouts(self.now)

    def reset_timeouts(self, now: float) -> None:
        """All three clocks start again (the member has just joined)."""
        self.session_deadline = now + self.session_timeout_ms
        self.poll_deadline = now + self.max_poll_interval_ms
        self.next_heartbeat = now + self.heartbeat_interval_ms

    def reset_session_timeout(self, now: float) -> None:
        """The session clock starts again (a coordinator was just found)."""
        self.session_deadline = now + self.session_timeout_ms

    def poll(self, now: float) -> None:
        """The application polled."""
        self.poll_deadline = now + self.max_poll_interval_ms

    def sent_heartbeat(self, now: float) -> None:
        self.next_heartbeat = now + self.heartbeat_interval_ms

    def failed_heartbeat(self, now: float) -> None:
        """A heartbeat got no useful answer: the next one goes after the backoff."""
        self.next_heartbeat = now + backoff_ms(self.retry_backoff_ms, self.retry_backoff_max_ms, self.failed_attempts)
        self.failed_attempts += 1

    def received_heartbeat(self, now: float) -> None:
        """The coordinator answered a heartbeat: the session is alive."""
        self.failed_attempts = 0
        self.session_deadline = now + self.session_timeout_ms

    def should_heartbeat(self, now: float) -> bool:
        return now >= self.next_heartbeat

    def time_to_next_heartbeat(self, now: float) -> float:
        return max(0.0, self.next_heartbeat - now)

    def session_timeout_expired(self, now: float) -> bool:
        return now >= self.session_deadline

    def poll_timeout_expired(self, now: float) -> bool:
        return now >= self.poll_deadline
