"""The field aggregations behind KeyedStream.sum/min/max, and their map-side combine."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sessioncluster.api.accumulators import IntCounter
from sessioncluster.api.functions import (
    FieldAggregation,
    FieldMax,
    FieldMaxBy,
    FieldMin,
    FieldMinBy,
    FieldSum,
    MapFunction,
    RuntimeContext,
    as_callable,
)
from sessioncluster.common.types import Row


def fold(agg: FieldAggregation, records: list[Any], key_selector: Any) -> dict[Any, Any]:
    """The reference: reduce each key's records in arrival order with ``agg`` itself."""
    out: dict[Any, Any] = {}
    for rec in records:
        k = key_selector(rec)
        out[k] = agg(out[k], rec) if k in out else rec
    return out


@pytest.mark.parametrize("agg", [FieldSum(1), FieldMin(1), FieldMax(1), FieldMinBy(1), FieldMaxBy(1)],
                         ids=["sum", "min", "max", "min_by", "max_by"])
@pytest.mark.parametrize("shape", ["tuple", "list", "dict"])
def test_combine_by_key_equals_the_fold(agg: FieldAggregation, shape: str) -> None:
    rng = random.Random(7)
    rows = [(rng.choice("abcde"), rng.randint(-50, 50), rng.random()) for _ in range(500)]
    if shape == "list":
        rows = [list(r) for r in rows]  # type: ignore[misc]
    elif shape == "dict":
        rows = [{0: r[0], 1: r[1], 2: r[2]} for r in rows]  # type: ignore[misc]
    combined, n = agg.combine_by_key(iter(rows), lambda r: r[0])
    assert n == 500
    assert combined == fold(agg, rows, lambda r: r[0])


def test_the_other_fields_come_from_the_first_record_of_the_key() -> None:
    combined, _ = FieldSum(1).combine_by_key([("a", 1, "first"), ("a", 2, "second")], lambda r: r[0])
    assert combined == {"a": ("a", 3, "first")}
    assert FieldMax("score")({"score": 1, "who": "x"}, {"score": 5, "who": "y"}) == {"score": 5, "who": "x"}


@pytest.mark.parametrize("agg,expected", [(FieldSum(None), 12), (FieldMin(None), 1), (FieldMax(None), 6)])
def test_plain_numbers_without_a_position(agg: FieldAggregation, expected: int) -> None:
    combined, n = agg.combine_by_key([1, 2, 3, 6], lambda x: 0)
    assert (combined, n) == ({0: expected}, 4)
    assert agg.combine_by_key([1, 2, 3, 6], lambda x: x % 2)[0] == fold(agg, [1, 2, 3, 6], lambda x: x % 2)


def test_min_by_and_max_by_keep_the_whole_first_record_of_equal_ones() -> None:
    """/work/briefs/data/lead29/keyed_stream.out (PyFlink 2.3, BATCH): min_by(1) a's
    ('a', 1, 'y') (not the later ('a', 1, 'w')); min(1) ('a', 1, 'x'): the first record's
    other fields."""
    data = [("a", 3, "x"), ("a", 1, "y"), ("b", 5, "z"), ("a", 1, "w"), ("b", 7, "v")]
    assert fold(FieldMinBy(1), data, lambda r: r[0]) == {"a": ("a", 1, "y"), "b": ("b", 5, "z")}
    assert fold(FieldMaxBy(1), data, lambda r: r[0]) == {"a": ("a", 3, "x"), "b": ("b", 7, "v")}
    assert fold(FieldMin(1), data, lambda r: r[0]) == {"a": ("a", 1, "x"), "b": ("b", 5, "z")}
    row = FieldMaxBy("v")(Row(k="a", v=1), Row(k="a", v=5))
    assert row == Row(k="a", v=5)
    assert FieldSum("v")(Row(k="a", v=1), Row(k="b", v=5)) == Row(k="a", v=6)


def test_a_basic_type_is_its_own_0th_field() -> None:
    """PyFlink: sum() of plain numbers sums them (keyed_stream.out: [6, 9] in BATCH); another
    position is PyFlink's TypeError."""
    assert FieldSum(0).combine_by_key([1, 2, 3, 4, 5], lambda x: x % 2)[0] == {1: 9, 0: 6}
    assert FieldMinBy(0)(3, 2) == 2
    with pytest.raises(TypeError, match=r"^The 1 field selected on a basic type\. A field "
                                        r"expression on a basic type can only select the 0th"):
        FieldSum(1)(3, 4)
    with pytest.raises(TypeError, match="must be of int or str type"):
        FieldSum(1.5)  # type: ignore[arg-type]


def test_empty_input() -> None:
    assert FieldSum(1).combine_by_key(iter([]), lambda r: r[0]) == ({}, 0)


def test_as_callable_and_the_runtime_context() -> None:
    class Double(MapFunction):
        def map(self, value: int) -> int:
            return 2 * value

    assert as_callable(Double())(4) == 8
    assert as_callable(len)("abc") == 3
    with pytest.raises(TypeError, match="not callable"):
        as_callable(42)
    ctx = RuntimeContext("Map", 1, 4, 0, {})
    ctx.add_accumulator("n", IntCounter())
    with pytest.raises(ValueError, match="already registered"):
        ctx.add_accumulator("n", IntCounter())
    with pytest.raises(KeyError, match="no accumulator named 'm'"):
        ctx.get_accumulator("m")
    assert (ctx.get_index_of_this_subtask(), ctx.get_number_of_parallel_subtasks()) == (1, 4)
    assert ctx.get_task_name_with_subtasks() == "Map (2/4)#0"  # Flink's form
    assert ctx.get_max_number_of_parallel_subtasks() == 128
    assert ctx.get_job_parameter("x", "none") == "none"
    keyed = RuntimeContext("Map", 0, 1, 0, {}, job_parameters={"x": "1"}).with_keyed_state(None)
    assert keyed.get_job_parameter("x", "none") == "1"


def test_output_tag_time_domain_and_the_runtime_context_of_keyed_operators() -> None:
    from sessioncluster.api.functions import (
        KEYED_STATE_ERROR,
        KeyedProcessFunction,
        OutputTag,
        ProcessFunction,
        TimeDomain,
        check_output_tag,
    )
    from sessioncluster.runtime.state_backend import KeyedStateBackend
    from sessioncluster.api.state import ValueStateDescriptor

    assert OutputTag("a") == OutputTag("a", None) and hash(OutputTag("a")) == hash(OutputTag("a"))
    assert OutputTag("a").tag_id == "a" and check_output_tag(OutputTag("b")).tag_id == "b"
    with pytest.raises(ValueError):
        OutputTag(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs an OutputTag"):
        check_output_tag("a")
    assert TimeDomain.EVENT_TIME != TimeDomain.PROCESSING_TIME
    ctx = RuntimeContext("Map", 0, 1, 0, {})
    with pytest.raises(RuntimeError) as err:
        ctx.get_list_state(ValueStateDescriptor("x"))  # type: ignore[arg-type]
    assert str(err.value) == KEYED_STATE_ERROR
    backend = KeyedStateBackend()
    keyed = ctx.with_keyed_state(backend)
    backend.set_current_key("k")
    keyed.get_state(ValueStateDescriptor("x")).update(1)
    assert keyed.get_state(ValueStateDescriptor("x")).value() == 1
    assert keyed.get_index_of_this_subtask() == 0
    assert issubclass(KeyedProcessFunction, ProcessFunction)
    plain = ProcessFunction.Context()
    assert plain.timestamp() is None and plain.get_current_key() is None
    assert plain.timer_service().current_processing_time() > 0
