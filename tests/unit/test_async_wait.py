"""The async wait operator (AsyncDataStream) without Spark, against PyFlink 2.3's recorded output
(/work/briefs/data/dsasync/probe.py, probe_output.txt: BATCH and STREAMING, parallelism 1)."""

from __future__ import annotations

import asyncio
import functools
import heapq
import traceback
from typing import Any

import cloudpickle
import pytest

from sessioncluster.api.async_io import (
    AsyncFunction,
    AsyncRetryStrategy,
    empty_result_predicate,
    exception_type_predicate,
)
from sessioncluster.api.functions import RuntimeContext
from sessioncluster.common.asyncwork import worker_loop
from sessioncluster.runtime.batch_driver import run as run_batch
from sessioncluster.runtime.operators import AsyncWaitOperator, open_function

S10 = 10_000


def delay(v: int) -> float:
    """The probe's delays (0.04 s a step) scaled by 1.5: the order is the same, and the test
    keeps it on a busy machine."""
    return ((v * 37) % 11) * 0.06


class Sleepy(AsyncFunction):
    async def async_invoke(self, value: int) -> list[int]:
        await asyncio.sleep(delay(value))
        return [value * 10]


class Counting(Sleepy):
    """Sleepy, counting the calls in flight at once."""

    def __init__(self) -> None:
        self.now = self.most = 0

    async def async_invoke(self, value: int) -> list[int]:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            return await super().async_invoke(value)
        finally:
            self.now -= 1


class Slow(AsyncFunction):
    async def async_invoke(self, value: int) -> list[str]:
        await asyncio.sleep(1.5 if value % 3 == 0 else 0.01)
        return ["ok %d" % value]

    def timeout(self, value: int) -> list[str]:
        return ["timeout %d" % value]


class SlowDefault(AsyncFunction):
    async def async_invoke(self, value: int) -> list[str]:
        await asyncio.sleep(1.5 if value == 4 else 0.01)
        return ["ok %d" % value]


class Flaky(AsyncFunction):
    def __init__(self) -> None:
        self.seen: dict[int, int] = {}

    async def async_invoke(self, value: int) -> list[str]:
        n = self.seen[value] = self.seen.get(value, 0) + 1
        await asyncio.sleep(0.01)
        if n == 1:
            raise TimeoutError("first attempt of %d" % value)
        return ["%d attempt %d" % (value, n)]


class AlwaysFlaky(AsyncFunction):
    async def async_invoke(self, value: int) -> list[str]:
        raise TimeoutError("always %d" % value)


class EmptyRetry(Flaky):
    async def async_invoke(self, value: int) -> list[str]:
        n = self.seen[value] = self.seen.get(value, 0) + 1
        return [] if n < 2 else ["%d after %d" % (value, n)]


class Boom(AsyncFunction):
    async def async_invoke(self, value: int) -> list[int]:
        await asyncio.sleep(0.01)
        if value == 3:
            raise ValueError("boom on %d" % value)
        return [value]


class NotAList(AsyncFunction):
    async def async_invoke(self, value: int) -> Any:
        return value


def run(op: AsyncWaitOperator, n: int, chunk: int | None = None) -> list[Any]:
    op = cloudpickle.loads(cloudpickle.dumps(op))  # operators travel as user code
    open_function(op, RuntimeContext("async wait operator", 0, 1, 0, {}))
    try:
        return [v for _, _, v in run_batch(op, iter((None, i) for i in range(n)))]
    finally:
        op.close()


FIXED = AsyncRetryStrategy.fixed_delay(3, 50, None, functools.partial(
    exception_type_predicate, expected_error_type=TimeoutError))


def completion_times(capacity: int, n: int = 20) -> dict[int, int]:
    """When each record's call completes (in delay steps) with ``capacity`` calls in flight,
    each record taken as soon as a call completes (UNORDERED)."""
    in_flight: list[tuple[int, int]] = []
    done: dict[int, int] = {}
    taken = 0
    now = 0
    while taken < n or in_flight:
        while taken < n and len(in_flight) < capacity:
            heapq.heappush(in_flight, (now + (taken * 37) % 11, taken))
            taken += 1
        now, v = heapq.heappop(in_flight)
        done[v] = now
    return done


@pytest.mark.parametrize("ordered,capacity,expected", [
    (True, 10, [v * 10 for v in range(20)]),
    (True, 2, [v * 10 for v in range(20)]),
    (False, 10, [0, 30, 110, 60, 90, 10, 140, 40, 120, 70, 100, 170, 20, 50, 150, 80, 130, 180,
                 160, 190]),
    (False, 2, [0, 10, 30, 20, 40, 60, 50, 70, 90, 80, 110, 100, 120, 140, 130, 150, 170, 180,
                160, 190]),
    (False, 1, [v * 10 for v in range(20)]),
])
def test_order_and_capacity_as_flink(ordered: bool, capacity: int, expected: list[int]) -> None:
    got = run(AsyncWaitOperator(Sleepy(), S10, capacity, ordered=ordered), 20)
    if ordered:
        assert got == expected
        return
    # calls completing at the same time come in either order, in Flink too (BATCH and STREAMING
    # of the probe differ there): the same records, completed in the same order of time
    at = completion_times(capacity)
    assert sorted(got) == sorted(expected)
    assert [at[v // 10] for v in got] == [at[v // 10] for v in expected] == sorted(at.values())


def test_at_most_capacity_calls_in_flight() -> None:
    fn = Counting()
    op = AsyncWaitOperator(fn, S10, 3, ordered=False)
    open_function(op, RuntimeContext("async", 0, 1, 0, {}))
    op.process_elements([(None, i) for i in range(12)])
    op.finish()
    assert fn.most == 3 and len(op.output.drain()) == 12


def test_timeout_gives_the_functions_timeout_outputs() -> None:
    got = run(AsyncWaitOperator(Slow(), 500, 10, ordered=False), 8)
    # the eight records are taken at once: the calls that finish do so at the same time, and so
    # do the timeouts, each group in either order (the probe's order is one of them)
    assert sorted(got[:5]) == ['ok 1', 'ok 2', 'ok 4', 'ok 5', 'ok 7']
    assert sorted(got[5:]) == ['timeout 0', 'timeout 3', 'timeout 6']
    assert run(AsyncWaitOperator(Slow(), 500, 10, ordered=True), 8) == [
        'timeout 0', 'ok 1', 'ok 2', 'timeout 3', 'ok 4', 'ok 5', 'timeout 6', 'ok 7']


def test_default_timeout_fails_the_job_with_flinks_message() -> None:
    with pytest.raises(Exception) as info:
        run(AsyncWaitOperator(SlowDefault(), 500, 10), 8)
    assert info.value.args == (
        "Error happens inside the class '<class 'test_async_wait.SlowDefault'>' during handling "
        "input '4'", info.value.args[1])
    assert str(info.value.args[1]) == "Async function call has timed out for input: 4"


def test_retry_succeeds_on_the_second_attempt() -> None:
    assert run(AsyncWaitOperator(Flaky(), S10, 10, FIXED, ordered=True), 6) == [
        "%d attempt 2" % i for i in range(6)]
    assert sorted(run(AsyncWaitOperator(Flaky(), S10, 10, FIXED, ordered=False), 6)) == [
        "%d attempt 2" % i for i in range(6)]
    empty = AsyncRetryStrategy.fixed_delay(3, 50, empty_result_predicate, None)
    assert run(AsyncWaitOperator(EmptyRetry(), S10, 10, empty), 4) == [
        "%d after 2" % i for i in range(4)]


def test_retries_exhausted_fail_with_the_last_error() -> None:
    with pytest.raises(Exception, match="Error happens inside the class") as info:
        run(AsyncWaitOperator(AlwaysFlaky(), S10, 10, FIXED), 3)
    assert isinstance(info.value.args[1], TimeoutError)


def test_a_raising_call_fails_the_job_with_the_users_traceback() -> None:
    with pytest.raises(Exception) as info:
        run(AsyncWaitOperator(Boom(), S10, 10), 6)
    assert info.value.args[0] == ("Error happens inside the class "
                                  "'<class 'test_async_wait.Boom'>' during handling input '3'")
    assert repr(info.value.args[1]) == "ValueError('boom on 3')"
    text = "".join(traceback.format_exception(info.value))
    assert 'raise ValueError("boom on %d" % value)' in text


def test_a_result_not_a_list_fails_with_pyflinks_runtime_error() -> None:
    with pytest.raises(RuntimeError, match=r"^The result of AsyncFunction should be of list type, "
                       r"please check the methods 'async_invoke' and 'timeout' of class "
                       r"'<class 'test_async_wait.NotAList'>'.$"):
        run(AsyncWaitOperator(NotAList(), S10, 10), 3)


def test_outputs_keep_the_input_timestamp() -> None:
    op = AsyncWaitOperator(Sleepy(), S10, 4, ordered=False)
    open_function(op, RuntimeContext("async", 0, 1, 0, {}))
    out = list(run_batch(op, iter([(5, 1), (7, 3)])))
    assert out == [(None, 7, 30), (None, 5, 10)]


def test_the_task_error_shows_the_users_frames_of_the_cause() -> None:
    from sessioncluster.taskmanager.slotworker import user_task_error

    with pytest.raises(Exception) as info:
        run(AsyncWaitOperator(Boom(), S10, 10), 6)
    error = user_task_error(info.value, "async wait operator", "1/1")
    assert error.exc_type == "Exception" and "boom on 3" in error.message
    assert ("async_invoke", 'raise ValueError("boom on %d" % value)') in [
        (name, line) for _, _, name, line in error.frames]


class _NoCluster:
    """A stand-in session: building programs needs none."""

    name = "none"


class NotAsync(AsyncFunction):
    def async_invoke(self, value: int) -> list[int]:  # type: ignore[override]
        return [value]


def test_async_data_stream_refuses_as_pyflink_and_names_the_operator() -> None:
    from sessioncluster.client.environment import ContextStreamExecutionEnvironment
    from sessioncluster.common.time import Time
    from sessioncluster.pyflink.datastream import AsyncDataStream

    env = ContextStreamExecutionEnvironment(_NoCluster())  # type: ignore[arg-type]
    ds = env.from_collection([1, 2])
    with pytest.raises(Exception, match=r"^Method 'async_invoke' of class '<class "
                       r"'test_async_wait.NotAsync'>' should be declared as 'async def'.$"):
        AsyncDataStream.ordered_wait(ds, NotAsync(), Time.seconds(1))
    with pytest.raises(Exception, match="^Timeout should be configured when do async with retry.$"):
        AsyncDataStream.unordered_wait_with_retry(ds, Sleepy(), Time.milliseconds(0), FIXED)
    with pytest.raises(Exception, match="^Async retry strategy should not be None.$"):
        AsyncDataStream.ordered_wait_with_retry(ds, Sleepy(), Time.seconds(1), None)
    out = AsyncDataStream.unordered_wait(ds, Sleepy(), Time.seconds(1), 7)
    assert out.node.name == "async wait operator"
    assert (out.node.function.capacity, out.node.function.ordered) == (7, False)


def test_close_after_a_failure_ends_the_calls_still_running() -> None:
    op = AsyncWaitOperator(Slow(), S10, 10, ordered=True)
    open_function(op, RuntimeContext("async", 0, 1, 0, {}))
    op.process_elements([(None, i) for i in range(4)])  # 0 and 3 sleep 1.5 s
    op.close()
    assert not [task for task in asyncio.all_tasks(worker_loop()) if not task.done()]
