"""Async I/O of the DataStream API (PyFlink 2.3's ``AsyncFunction`` of
``pyflink.datastream.functions``, ``async_retry_strategies`` and ``async_retry_predicates``)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .functions import Function

ResultPredicate = Optional[Callable[[list[Any]], bool]]
ExceptionPredicate = Optional[Callable[[Exception], bool]]


class AsyncFunction(Function):
    """A function whose ``async def async_invoke(value)`` returns the list of the value's
    outputs; ``timeout(value)`` gives them when the call did not finish in time (by default it
    raises, and the job fails)."""

    async def async_invoke(self, value: Any) -> list[Any]:
        raise NotImplementedError

    def timeout(self, value: Any) -> list[Any]:
        raise TimeoutError("Async function call has timed out for input: " + str(value))


class AsyncRetryPredicate:
    """When an attempt is retried: on its result, on its exception (None: never)."""

    def result_predicate(self) -> ResultPredicate:
        raise NotImplementedError

    def exception_predicate(self) -> ExceptionPredicate:
        raise NotImplementedError


class AsyncRetryStrategy:
    """Whether and after how long an attempt of ``async_invoke`` is made again."""

    def can_retry(self, current_attempts: int) -> bool:
        raise NotImplementedError

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        raise NotImplementedError

    def get_retry_predicate(self) -> AsyncRetryPredicate:
        raise NotImplementedError

    @staticmethod
    def no_restart() -> "AsyncRetryStrategy":
        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(max_attempts: int, backoff_time_millis: int,
                    result_predicate: ResultPredicate,
                    exception_predicate: ExceptionPredicate) -> "AsyncRetryStrategy":
        return FixedDelayRetryStrategy(max_attempts, backoff_time_millis, result_predicate,
                                       exception_predicate)

    @staticmethod
    def exponential_backoff(max_attempts: int, initial_delay: int, max_retry_delay: int,
                            multiplier: float, result_predicate: ResultPredicate,
                            exception_predicate: ExceptionPredicate) -> "AsyncRetryStrategy":
        return ExponentialBackoffDelayRetryStrategy(max_attempts, initial_delay, max_retry_delay,
                                                    multiplier, result_predicate,
                                                    exception_predicate)


class RetryPredicate(AsyncRetryPredicate):
    def __init__(self, result_predicate: ResultPredicate,
                 exception_predicate: ExceptionPredicate) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate:
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy):
    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate:
        return RetryPredicate(None, None)


class FixedDelayRetryStrategy(AsyncRetryStrategy):
    """Attempts while their number is at most ``max_attempts``, ``backoff_time_millis`` apart."""

    def __init__(self, max_attempts: int, backoff_time_millis: int,
                 result_predicate: ResultPredicate,
                 exception_predicate: ExceptionPredicate) -> None:
        assert max_attempts > 0, "max_attempts should be greater than zero."
        assert backoff_time_millis > 0, "backoff_time_millis should be greater than zero."
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate:
        return self._predicate


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy):
    """Attempts while their number is at most ``max_attempts``; the delay starts at
    ``initial_delay`` and grows by ``multiplier`` up to ``max_retry_delay``."""

    def __init__(self, max_attempts: int, initial_delay: int, max_retry_delay: int,
                 multiplier: float, result_predicate: ResultPredicate,
                 exception_predicate: ExceptionPredicate) -> None:
        assert max_attempts > 0, "max_attempts should be greater than zero."
        assert initial_delay > 0, "initial_delay should be greater than zero."
        assert max_retry_delay > 0, "max_retry_delay should be greater than zero."
        assert multiplier > 0, "multiplier should be greater than zero."
        self._max_attempts = max_attempts
        self._initial_delay = initial_delay
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._last_retry_delay = initial_delay
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        if current_attempts <= 1:
            self._last_retry_delay = self._initial_delay
            return self._last_retry_delay
        backoff = int(min(self._last_retry_delay * self._multiplier, self._max_retry_delay))
        self._last_retry_delay = backoff
        return backoff

    def get_retry_predicate(self) -> AsyncRetryPredicate:
        return self._predicate


NO_RETRY_STRATEGY: AsyncRetryStrategy = NoRetryStrategy()


# -- pyflink.datastream.async_retry_predicates ------------------------------------------------

def empty_result_predicate(result: list[Any] | None) -> bool:
    return result is None or len(result) == 0


def has_exception_predicate(error: Exception | None) -> bool:
    return error is not None


def exception_type_predicate(error: Exception | None, expected_error_type: type) -> bool:
    return isinstance(error, expected_error_type)
