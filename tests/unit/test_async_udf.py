"""Async scalar functions without Spark: ``udf`` of an AsyncScalarFunction or an ``async def``,
the ordered bounded-concurrency evaluation of a batch of rows (PyFlink 2.3's
``AsyncScalarFunctionOperation`` semantics: order, max-concurrent-operations, timeout, fixed-delay
retries) and the runner Spark's workers call on an Arrow batch."""

from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa
import pytest

from sessioncluster.api.table.udf import (
    AsyncScalarFunction,
    FunctionContext,
    UserDefinedAsyncScalarFunctionWrapper,
    UserDefinedScalarFunctionWrapper,
    udf,
)
from sessioncluster.common.types import Row
from sessioncluster.spark.flinksql.asyncscalar import AsyncOptions, evaluate, worker_loop
from sessioncluster.spark.flinksql.udf_runners import AsyncScalarRunner


class Counting:
    """An async function recording how many of its calls are in flight at once."""

    def __init__(self, delay: float = 0.01, fail_on: Any = None, fail_times: int = 0) -> None:
        self.delay = delay
        self.now = self.most = 0
        self.calls: list[Any] = []
        self.fail_on, self.fail_times = fail_on, fail_times

    async def __call__(self, x: Any) -> Any:
        self.now += 1
        self.most = max(self.most, self.now)
        self.calls.append(x)
        try:
            # later rows finish first: the results' order must come from the input's
            await asyncio.sleep(self.delay * (1 + (7 - x % 7)) / 8)
            if x == self.fail_on and self.calls.count(x) <= self.fail_times:
                raise ValueError(f"flaky {x}")
            return x * 10
        finally:
            self.now -= 1


class Lookup(AsyncScalarFunction):
    def __init__(self) -> None:
        self.opened = 0

    def open(self, function_context: FunctionContext) -> None:
        self.opened += 1
        self.prefix = function_context.get_job_parameter("prefix", "?")

    async def eval(self, key: Any) -> Any:
        await asyncio.sleep(0.001)
        return None if key is None else f"{self.prefix}{key}"


def test_udf_of_an_async_def_or_an_async_scalar_function_is_an_async_wrapper() -> None:
    @udf(result_type="STRING")
    async def decorated(x: str) -> str:
        return x

    assert isinstance(decorated, UserDefinedAsyncScalarFunctionWrapper)
    assert isinstance(decorated.function, AsyncScalarFunction)
    assert asyncio.run(decorated.function.eval("a")) == "a"
    assert isinstance(udf(Lookup(), result_type="STRING"), UserDefinedAsyncScalarFunctionWrapper)
    assert not isinstance(udf(lambda x: x, result_type="STRING"),
                          UserDefinedAsyncScalarFunctionWrapper)
    assert isinstance(udf(lambda x: x, result_type="STRING"), UserDefinedScalarFunctionWrapper)
    with pytest.raises(ValueError, match="Async scalar functions do not support pandas"):
        udf(decorated.function, result_type="STRING", func_type="pandas")


def test_results_keep_the_input_order_with_at_most_max_concurrent_in_flight() -> None:
    for capacity in (1, 3, 10):
        f = Counting()
        rows = [(i,) for i in range(25)]
        got = evaluate(f, rows, AsyncOptions(max_concurrent_operations=capacity))
        assert got == [i * 10 for i in range(25)]
        assert f.most == capacity  # all the capacity used, never more


def test_one_event_loop_per_worker_reused() -> None:
    loop = worker_loop()
    assert evaluate(Counting(), [(1,)], AsyncOptions()) == [10]
    assert worker_loop() is loop and not loop.is_closed()


def test_a_row_past_the_timeout_fails_with_flinks_message() -> None:
    async def slow(x: int) -> int:
        await asyncio.sleep(5 if x == 2 else 0)
        return x

    with pytest.raises(TimeoutError, match=r"Async function call has timed out for input: "
                                           r"<Row\(2\)>"):
        evaluate(slow, [(1,), (2,), (3,)], AsyncOptions(timeout=0.05),
                 describe=lambda row: repr(Row(*row)))


def test_fixed_delay_retries_and_no_retry() -> None:
    flaky = Counting(fail_on=4, fail_times=2)  # fails twice, then succeeds
    options = AsyncOptions(retry_delay=0.001, max_attempts=3)
    assert evaluate(flaky, [(i,) for i in range(6)], options) == [i * 10 for i in range(6)]
    assert flaky.calls.count(4) == 3
    # PyFlink's FixedDelayRetryStrategy retries while the attempt is <= max_attempts
    always = Counting(fail_on=4, fail_times=100)
    with pytest.raises(ValueError, match="flaky 4"):
        evaluate(always, [(4,)], AsyncOptions(retry_delay=0.001, max_attempts=2))
    assert always.calls.count(4) == 3
    once = Counting(fail_on=4, fail_times=1)
    with pytest.raises(ValueError, match="flaky 4"):
        evaluate(once, [(4,)], AsyncOptions(retry=False))
    assert once.calls.count(4) == 1


def test_options_by_flinks_keys_and_defaults() -> None:
    assert AsyncOptions.of({}) == AsyncOptions(10, 180.0, True, 0.1, 3)
    assert AsyncOptions.of({
        "table.exec.async-scalar.max-concurrent-operations": "4",
        "table.exec.async-scalar.timeout": "2 s",
        "table.exec.async-scalar.retry-strategy": "no_retry",
        "table.exec.async-scalar.retry-delay": "50 ms",
        "table.exec.async-scalar.max-attempts": "5"}) == AsyncOptions(4, 2.0, False, 0.05, 5)
    assert AsyncOptions.of({"table.exec.async-scalar.buffer-capacity": "7"}) \
        .max_concurrent_operations == 7
    with pytest.raises(ValueError, match="FIXED_DELAY or NO_RETRY"):
        AsyncOptions.of({"table.exec.async-scalar.retry-strategy": "EXPONENTIAL"})


def test_the_runner_on_an_arrow_batch() -> None:
    function = Lookup()
    runner = AsyncScalarRunner(function, "token-lookup", "Lookup", {"prefix": "v_"}, "STRING",
                               AsyncOptions())
    runner.arrow_type = pa.string()
    got = runner(pa.array(["a", None, "c"]))
    assert got.to_pylist() == ["v_a", None, "v_c"] and got.type == pa.string()
    runner(pa.array(["d"]))
    assert function.opened == 1

    @udf(result_type="ROW<n BIGINT, s STRING>")
    async def both(r: Row) -> Row:
        return Row(r.n + 1, r.s)

    rows = AsyncScalarRunner(both.function, "token-both", "both", {}, "ROW<n BIGINT, s STRING>",
                             AsyncOptions())
    rows.arrow_type = pa.struct([("n", pa.int64()), ("s", pa.string())])
    structs = pa.array([{"n": 1, "s": "x"}], type=rows.arrow_type)
    assert rows(structs).to_pylist() == [{"n": 2, "s": "x"}]

    @udf(result_type="BIGINT")
    async def wrong(x: int) -> str:
        return str(x)

    checked = AsyncScalarRunner(wrong.function, "token-wrong-async", "wrong", {}, "BIGINT",
                                AsyncOptions(retry=False))
    checked.arrow_type = pa.int64()
    with pytest.raises(TypeError, match="'wrong' returned '1' .str., but its result_type is "
                                        "BIGINT"):
        checked(pa.array([1]))
