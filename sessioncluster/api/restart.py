"""Restart strategies with PyFlink's names (``pyflink.common.restart_strategy``).

Spark retries a failed task by itself (``--task-attempts``); when a job fails all the same, its
JobMaster restarts it whole as Flink does: the job goes RESTARTING, waits the strategy's delay,
and runs again with new Executions (the next attempt numbers) in the same ExecutionGraph. The
default, as in Flink with no checkpointing, is no restart.

>>> env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 1000))   # doctest: +SKIP
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RestartStrategyConfiguration:
    """What to do when a job fails; ``attempts`` is None when unbounded (failure rate)."""

    kind: str
    attempts: int = 0
    delay_ms: int = 0
    #: failure rate: at most ``attempts`` failures within ``interval_ms``
    interval_ms: int = 0

    def get_description(self) -> str:
        if self.kind == "fixed-delay":
            return (f"Restart with fixed delay ({self.delay_ms} ms). #{self.attempts} restart "
                    "attempts.")
        if self.kind == "failure-rate":
            return (f"Failure rate restart with maximum of {self.attempts} failures within interval "
                    f"{self.interval_ms} ms and fixed delay {self.delay_ms} ms.")
        return "Restart deactivated." if self.kind == "none" else "Cluster level default restart strategy"


def _millis(value: object) -> int:
    """PyFlink takes milliseconds or a ``datetime.timedelta``."""
    import datetime

    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    millis = getattr(value, "millis", None)  # a Duration or a Time
    if millis is not None:
        return int(millis)
    if isinstance(value, (int, float)):
        return int(value)
    raise TypeError(f"expected milliseconds, a timedelta, a Duration or a Time, not {value!r}")


class RestartStrategies:
    """Factories of restart strategy configurations (PyFlink's ``RestartStrategies``)."""

    @staticmethod
    def no_restart() -> RestartStrategyConfiguration:
        return RestartStrategyConfiguration("none")

    @staticmethod
    def fall_back_restart() -> RestartStrategyConfiguration:
        """The cluster's default: here, no restart."""
        return RestartStrategyConfiguration("fallback")

    @staticmethod
    def fixed_delay_restart(restart_attempts: int,
                            delay_between_attempts: object) -> RestartStrategyConfiguration:
        if restart_attempts < 0:
            raise ValueError("restart_attempts must not be negative")
        return RestartStrategyConfiguration("fixed-delay", restart_attempts, _millis(delay_between_attempts))

    @staticmethod
    def failure_rate_restart(failure_rate: int, failure_interval: object,
                             delay_interval: object) -> RestartStrategyConfiguration:
        if failure_rate < 1:
            raise ValueError("failure_rate must be at least 1")
        return RestartStrategyConfiguration("failure-rate", failure_rate, _millis(delay_interval),
                                            _millis(failure_interval))


@dataclass(slots=True)
class RestartBackoff:
    """The JobMaster's side of a strategy: may the job restart after a failure at ``now``?"""

    config: RestartStrategyConfiguration | None
    restarts: int = 0
    failures: deque[float] = field(default_factory=deque)

    def can_restart(self, now: float) -> bool:
        config = self.config
        if config is None or config.kind in ("none", "fallback"):
            return False
        if config.kind == "fixed-delay":
            return self.restarts < config.attempts
        # failure rate: at most `attempts` failures within the interval
        self.failures.append(now)
        while self.failures and self.failures[0] < now - config.interval_ms / 1000:
            self.failures.popleft()
        return len(self.failures) <= config.attempts

    @property
    def delay_seconds(self) -> float:
        return (self.config.delay_ms if self.config is not None else 0) / 1000
