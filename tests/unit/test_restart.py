"""Restart strategies: PyFlink's factories and the JobMaster's decision, without Spark."""

from __future__ import annotations

import datetime

import pytest

from sessioncluster.common.time import Duration
from sessioncluster.api.restart import RestartBackoff, RestartStrategies


def test_fixed_delay_allows_n_restarts() -> None:
    backoff = RestartBackoff(RestartStrategies.fixed_delay_restart(2, datetime.timedelta(seconds=1)))
    assert backoff.delay_seconds == 1.0
    for _ in range(2):
        assert backoff.can_restart(0.0)
        backoff.restarts += 1
    assert not backoff.can_restart(0.0)


def test_failure_rate_counts_failures_within_the_interval() -> None:
    backoff = RestartBackoff(RestartStrategies.failure_rate_restart(2, Duration.of_seconds(10), 500))
    assert backoff.can_restart(0.0) and backoff.can_restart(1.0)
    assert not backoff.can_restart(2.0)          # a third failure within 10 s
    assert backoff.can_restart(30.0)             # the old ones have left the interval
    assert backoff.delay_seconds == 0.5


@pytest.mark.parametrize("config", [None, RestartStrategies.no_restart(),
                                    RestartStrategies.fall_back_restart()])
def test_no_restart(config) -> None:
    assert not RestartBackoff(config).can_restart(0.0)


def test_descriptions_and_bad_values() -> None:
    assert "3 restart attempts" in RestartStrategies.fixed_delay_restart(3, 10).get_description().replace("#", "")
    with pytest.raises(ValueError):
        RestartStrategies.fixed_delay_restart(-1, 0)
    with pytest.raises(TypeError):
        RestartStrategies.fixed_delay_restart(1, "soon")
