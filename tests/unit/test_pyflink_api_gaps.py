"""PyFlink 2.3 names that sessioncluster.pyflink lacked: TableConfig's idle state retention,
DataTypes.INTERVAL and its resolutions, JobStatus's members and predicates, and expressions
(current_database, source_watermark, temporal_overlaps, json, ...). The answers are PyFlink
2.3's, recorded by /work/briefs/data/apigaps/probe.py and probe2.py (probe.out, probe2.out)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import sqlglot

import sessioncluster.spark.flinksql.dialect  # noqa: F401 - registers read="flink"
from sessioncluster.common.time import format_duration_ms, parse_duration_ms
from sessioncluster.pyflink.common import Duration, JobStatus
from sessioncluster.pyflink.table import DataTypes, Schema, TableConfig
from sessioncluster.pyflink.table import expressions as E
from sessioncluster.pyflink.table.expressions import col, lit
from sessioncluster.pyflink.table.types import DayTimeIntervalType, YearMonthIntervalType


def test_idle_state_retention_is_table_exec_state_ttl_as_flink_writes_it() -> None:
    c = TableConfig()
    assert c.get_idle_state_retention() == datetime.timedelta(0)
    assert c.get("table.exec.state.ttl", "<unset>") == "<unset>"
    for duration, text in [(datetime.timedelta(hours=1), "1 h"),
                           (datetime.timedelta(milliseconds=1500), "1500 ms"),
                           (datetime.timedelta(days=2, minutes=3), "2883 min"),
                           (datetime.timedelta(0), "0 ms"),
                           (datetime.timedelta(seconds=-5), "-5 s"),
                           (datetime.timedelta(microseconds=500), "0 ms"),
                           (Duration.of_seconds(90), "90 s")]:
        c.set_idle_state_retention(duration)
        assert c.get("table.exec.state.ttl") == text
    c.set_idle_state_retention(datetime.timedelta(milliseconds=1500))
    assert c.get_idle_state_retention() == datetime.timedelta(seconds=1, microseconds=500000)
    for text, expected in [("30 min", 1800), ("90s", 90), ("2 h", 7200), ("1500", 1.5),
                           ("1 d", 86400), ("PT1H", 3600)]:
        c.set("table.exec.state.ttl", text)
        assert c.get_idle_state_retention() == datetime.timedelta(seconds=expected)
    c.set("table.exec.state.ttl", "bogus")
    with pytest.raises(ValueError, match="Could not parse value 'bogus' for key "
                                         "'table.exec.state.ttl'"):
        c.get_idle_state_retention()


def test_other_table_config_getters_have_flinks_defaults() -> None:
    c = TableConfig()
    assert c.get_max_generated_code_length() == 4000
    assert c.get_python_executable() is None
    c.set_max_generated_code_length(100)
    c.set_python_executable("/usr/bin/python3")
    assert (c.get_max_generated_code_length(), c.get_python_executable()) == \
        (100, "/usr/bin/python3")
    assert c.get("python.executable") == "/usr/bin/python3"


def test_durations_parse_and_format_as_flinks_time_utils() -> None:
    assert parse_duration_ms("P2DT3M") == 172_980_000
    assert parse_duration_ms("1min") == 60_000
    assert format_duration_ms(86_400_000) == "1 d"
    with pytest.raises(ValueError):
        parse_duration_ms("P")


D = DataTypes
#: (type, Flink's schema text (probe2.out))
INTERVALS = [
    (D.INTERVAL(D.SECOND()), "INTERVAL SECOND(6)"),
    (D.INTERVAL(D.SECOND(3)), "INTERVAL SECOND(3)"),
    (D.INTERVAL(D.MINUTE()), "INTERVAL MINUTE"),
    (D.INTERVAL(D.HOUR()), "INTERVAL HOUR"),
    (D.INTERVAL(D.DAY()), "INTERVAL DAY(2)"),
    (D.INTERVAL(D.DAY(3)), "INTERVAL DAY(3)"),
    (D.INTERVAL(D.DAY(), D.HOUR()), "INTERVAL DAY(2) TO HOUR"),
    (D.INTERVAL(D.DAY(), D.MINUTE()), "INTERVAL DAY(2) TO MINUTE"),
    (D.INTERVAL(D.DAY(1), D.SECOND(3)), "INTERVAL DAY(1) TO SECOND(3)"),
    (D.INTERVAL(D.HOUR(), D.MINUTE()), "INTERVAL HOUR TO MINUTE"),
    (D.INTERVAL(D.HOUR(), D.SECOND()), "INTERVAL HOUR TO SECOND(6)"),
    (D.INTERVAL(D.MINUTE(), D.SECOND(9)), "INTERVAL MINUTE TO SECOND(9)"),
    (D.INTERVAL(D.DAY()).not_null(), "INTERVAL DAY(2) NOT NULL"),
]


@pytest.mark.parametrize("data_type, text", INTERVALS)
def test_day_time_interval_types_print_as_flinks_schema(data_type: Any, text: str) -> None:
    assert str(data_type) == text
    assert type(data_type) is DayTimeIntervalType
    assert repr(data_type) == f"DayTimeIntervalType({str(data_type.is_nullable).lower()})"
    assert data_type.type_name() == "DAYTIMEINTERVAL"


def test_year_month_interval_types_and_resolutions_as_pyflinks() -> None:
    year_month = D.INTERVAL(D.YEAR(4), D.MONTH())
    assert (type(year_month), repr(year_month), year_month.type_name()) == \
        (YearMonthIntervalType, "YearMonthIntervalType(true)", "YEARMONTHINTERVAL")
    # PyFlink 2.3 keeps YEAR TO MONTH at the default precision
    assert (year_month.resolution, year_month.precision) == (3, 2)
    assert str(D.INTERVAL(D.YEAR(4))) == "INTERVAL YEAR(4)"
    assert str(D.INTERVAL(D.MONTH())) == "INTERVAL MONTH"
    assert (str(D.SECOND(3)), str(D.DAY()), str(D.YEAR())) == \
        ("IntervalUnit.SECOND(3)", "IntervalUnit.DAY(2)", "IntervalUnit.YEAR(2)")
    assert D.INTERVAL(D.DAY(), D.HOUR()) == D.INTERVAL(D.DAY(), D.HOUR())
    assert D.INTERVAL(D.DAY(), D.HOUR()) != D.INTERVAL(D.DAY())
    day_hour = D.INTERVAL(D.DAY(), D.HOUR())
    assert (day_hour.resolution.name, day_hour.day_precision,
            day_hour.fractional_precision) == ("DAY_TO_HOUR", 2, 6)
    assert D.INTERVAL(D.DAY(), D.SECOND(3)).spark_ddl() == "INTERVAL DAY TO SECOND"


@pytest.mark.parametrize("upper, lower", [
    (D.MONTH(), D.DAY()), (D.SECOND(), D.DAY()), (D.YEAR(), D.DAY()), (D.DAY(), D.DAY()),
    (D.MONTH(), D.YEAR()), (D.DAY(7), None), (D.SECOND(10), None), (D.YEAR(5), None)])
def test_intervals_pyflink_refuses_are_refused(upper: Any, lower: Any) -> None:
    with pytest.raises(ValueError):
        D.INTERVAL(upper, lower)


def test_job_status_has_pyflinks_members_and_predicates() -> None:
    pyflink = ["CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING", "CANCELED", "FINISHED",
               "RESTARTING", "SUSPENDED", "RECONCILING"]
    assert set(pyflink) <= {s.name for s in JobStatus}
    terminal = {s.name for s in JobStatus if s.is_terminal_state()}
    globally = {s.name for s in JobStatus if s.is_globally_terminal_state()}
    assert terminal == {"FAILED", "CANCELED", "FINISHED", "SUSPENDED"}
    assert globally == {"FAILED", "CANCELED", "FINISHED"}


def test_new_expressions_render_as_flink_sql_the_parser_reads() -> None:
    cases = [
        (E.current_database(), "CURRENT_DATABASE()"),
        (E.source_watermark(), "SOURCE_WATERMARK()"),
        (E.temporal_overlaps(lit("2024-01-01 10:00:00").to_timestamp, lit(1).hours,
                             col("b"), col("c")),
         "((CAST('2024-01-01 10:00:00' AS TIMESTAMP(3)), INTERVAL '1' HOUR) OVERLAPS "
         "(`b`, `c`))"),
        (E.json('{"a": 1}'), """JSON('{"a": 1}')"""),
        (E.map_from_arrays(col("k"), col("v")), "MAP_FROM_ARRAYS(`k`, `v`)"),
        (E.lag(col("a")), "LAG(`a`, 1)"),
        (E.lead(col("a"), 2, 0), "LEAD(`a`, 2, 0)"),
        (E.with_all_columns(), "*"),
        (E.descriptor("a", "b"), "DESCRIPTOR(`a`, `b`)"),
    ]
    for expression, sql in cases:
        assert expression.to_sql() == sql
    overlaps = sqlglot.parse_one(f"SELECT {cases[2][1]}", read="flink")
    assert isinstance(overlaps.expressions[0].unnest(), sqlglot.exp.Overlaps)


def test_source_watermark_in_a_schema_prints_as_flinks() -> None:
    schema = Schema.new_builder().column("ts", D.TIMESTAMP(3)) \
        .watermark("ts", E.source_watermark()).build()
    assert "WATERMARK FOR `ts` AS SOURCE_WATERMARK()" in str(schema)


def test_pyflink_expressions_all_names_resolve() -> None:
    namespace: dict[str, Any] = {}
    exec("from sessioncluster.pyflink.table.expressions import *", namespace)  # noqa: S102
    assert {"current_database", "source_watermark", "temporal_overlaps", "json",
            "descriptor"} <= set(namespace)


def test_memory_size_prints_as_javas() -> None:
    """probe5.out: Java's MemorySize.toString."""
    from sessioncluster.pyflink.datastream import MemorySize
    m = MemorySize.of_mebi_bytes(100)
    assert str(m) == "100 mb"
    assert (m.get_bytes(), m.get_kibi_bytes(), m.get_mebi_bytes(), m.get_gibi_bytes(),
            m.get_tebi_bytes()) == (104857600, 102400, 100, 0, 0)
    texts = {0: "0 bytes", 1: "1 bytes", 1023: "1023 bytes", 1024: "1 kb", 1536: "1536 bytes",
             1048576: "1 mb", 3 * 1024 ** 3: "3 gb", 5 * 1024 ** 4: "5497558138880 bytes",
             1024 ** 5: "1125899906842624 bytes"}
    assert {b: str(MemorySize(bytes_size=b)) for b in texts} == texts
    assert MemorySize(bytes_size=1) < MemorySize(bytes_size=2) <= MemorySize(bytes_size=2)
    with pytest.raises(ValueError, match="bytes must be >= 0"):
        MemorySize(bytes_size=-1)


def test_slot_sharing_group_builder_checks_as_flinks() -> None:
    from sessioncluster.pyflink.datastream import MemorySize, SlotSharingGroup
    plain = SlotSharingGroup.builder("a").build()
    assert (plain.get_name(), plain.get_cpu_cores(), plain.get_task_heap_memory(),
            plain.get_external_resources()) == ("a", None, None, {})
    assert plain == SlotSharingGroup.builder("a").build()
    full = SlotSharingGroup.builder("b").set_cpu_cores(1.5).set_task_heap_memory_mb(100) \
        .set_task_off_heap_memory(MemorySize.of_mebi_bytes(10)).set_managed_memory_mb(20) \
        .set_external_resource("gpu", 1.0).build()
    assert (full.get_cpu_cores(), str(full.get_task_heap_memory()),
            str(full.get_task_off_heap_memory()), str(full.get_managed_memory()),
            full.get_external_resources()) == (1.5, "100 mb", "10 mb", "20 mb", {"gpu": 1.0})
    for partial in (SlotSharingGroup.builder("c").set_managed_memory_mb(20),
                    SlotSharingGroup.builder("c").set_cpu_cores(1.0)):
        with pytest.raises(ValueError, match="The cpu cores and task heap memory are required"):
            partial.build()
    with pytest.raises(ValueError, match="The cpu cores should be positive."):
        SlotSharingGroup.builder("c").set_cpu_cores(0.0)
    with pytest.raises(ValueError, match="The task heap memory should be positive."):
        SlotSharingGroup.builder("c").set_task_heap_memory_mb(0)


def test_externalized_checkpoint_retention_as_flinks() -> None:
    """probe4.out: the default is NO_EXTERNALIZED_CHECKPOINTS (not enabled)."""
    from sessioncluster.api.checkpoint_config import CheckpointConfig
    from sessioncluster.pyflink.datastream import ExternalizedCheckpointRetention as R
    c = CheckpointConfig()
    assert (c.get_externalized_checkpoint_retention(), c.is_externalized_checkpoints_enabled()) \
        == (R.NO_EXTERNALIZED_CHECKPOINTS, False)
    for mode, enabled in [(R.DELETE_ON_CANCELLATION, True), (R.RETAIN_ON_CANCELLATION, True),
                          (R.NO_EXTERNALIZED_CHECKPOINTS, False)]:
        c.set_externalized_checkpoint_retention(mode)
        assert (c.get_externalized_checkpoint_retention(),
                c.is_externalized_checkpoints_enabled()) == (mode, enabled)
    assert c.to_options()["execution.checkpointing.externalized-checkpoint-retention"] == \
        "NO_EXTERNALIZED_CHECKPOINTS"


def test_small_pyflink_names_resolve() -> None:
    from sessioncluster.pyflink.common import ByteArraySchema, InputDependencyConstraint
    from sessioncluster.pyflink.datastream import GlobalWindow
    from sessioncluster.pyflink.datastream.functions import TimerService
    from sessioncluster.pyflink.table import Expression
    assert [c.name for c in InputDependencyConstraint] == ["ANY", "ALL"]
    assert ByteArraySchema().deserialize(ByteArraySchema().serialize(b"\x00a")) == b"\x00a"
    assert GlobalWindow and TimerService and isinstance(E.lit(1), Expression)


def test_overlaps_of_time_values_is_refused_rather_than_answered_wrong() -> None:
    from sessioncluster.spark.flinksql.model import FlinkSqlError
    from sessioncluster.spark.flinksql.planner import to_spark_sql
    pyflinks_example = E.temporal_overlaps(lit("2:55:00").to_time, lit(1).hours,
                                           lit("3:30:00").to_time, lit(2).hours)
    for sql in (f"SELECT {pyflinks_example}",
                "SELECT (TIME '2:55:00', INTERVAL '1' HOUR) OVERLAPS (TIME '3:30:00', "
                "INTERVAL '2' HOUR)"):
        with pytest.raises(FlinkSqlError, match="OVERLAPS of TIME values is not supported"):
            to_spark_sql(sqlglot.parse_one(sql, read="flink"), {})
    timestamps = sqlglot.parse_one(
        "SELECT (TIMESTAMP '2024-01-01 10:00:00', INTERVAL '30' MINUTE) OVERLAPS "
        "(TIMESTAMP '2024-01-01 11:00:00', INTERVAL '1' HOUR)", read="flink")
    assert "OVERLAPS" not in to_spark_sql(timestamps, {}).upper()
