"""The SQL Gateway's pure parts: results as Flink's gateway writes them (types, JSON and
PLAIN_TEXT values), the token protocol, operation states, session options and idle sessions."""

from __future__ import annotations

import asyncio
import datetime
import decimal
from typing import Any

import pytest

from sessioncluster.common.types import Row, RowKind
from sessioncluster.jobmanager.sqlgateway import (
    GatewayError,
    GatewayServices,
    OperationStatus,
    ResultType,
    RowFormat,
    SqlGatewayService,
)
from sessioncluster.jobmanager.sqlgateway.results import (
    MAX_FETCH_ROWS,
    OPERATION_TRANSITIONS,
    ResultFetcher,
    ResultSchema,
)
from sessioncluster.jobmanager.sqlgateway.serde import (
    data_type,
    json_field,
    logical_type_json,
    result_info,
)


def no_dispatcher(msg: Any) -> Any:
    raise AssertionError(f"{msg.type} reached the Dispatcher")


SERVICES = GatewayServices(ask=no_dispatcher, job_status=lambda job_id: None)


@pytest.mark.parametrize("text, expected", [
    ("INT NOT NULL", {"type": "INTEGER", "nullable": False}),
    ("STRING", {"type": "VARCHAR", "nullable": True, "length": 2147483647}),
    ("CHAR(3)", {"type": "CHAR", "nullable": True, "length": 3}),
    ("BYTES", {"type": "VARBINARY", "nullable": True, "length": 2147483647}),
    ("DECIMAL(10, 2)", {"type": "DECIMAL", "nullable": True, "precision": 10, "scale": 2}),
    ("TIMESTAMP(3) *ROWTIME*", {"type": "TIMESTAMP_WITHOUT_TIME_ZONE", "nullable": True,
                                "precision": 3}),
    ("TIMESTAMP_LTZ(3)", {"type": "TIMESTAMP_WITH_LOCAL_TIME_ZONE", "nullable": True,
                          "precision": 3}),
    ("TIME(0)", {"type": "TIME_WITHOUT_TIME_ZONE", "nullable": True, "precision": 0}),
    ("ARRAY<INT>", {"type": "ARRAY", "nullable": True,
                    "elementType": {"type": "INTEGER", "nullable": True}}),
    ("MAP<STRING, BIGINT>", {"type": "MAP", "nullable": True,
                             "keyType": {"type": "VARCHAR", "nullable": True,
                                         "length": 2147483647},
                             "valueType": {"type": "BIGINT", "nullable": True}}),
    ("ROW<a INT, b DOUBLE>", {"type": "ROW", "nullable": True, "fields": [
        {"name": "a", "fieldType": {"type": "INTEGER", "nullable": True}},
        {"name": "b", "fieldType": {"type": "DOUBLE", "nullable": True}}]}),
])
def test_logical_types_as_flink_s_serializer_writes_them(text: str, expected: Any) -> None:
    assert logical_type_json(data_type(text)) == expected


def test_json_values_are_flink_s_json_format_with_iso_timestamps() -> None:
    ts = datetime.datetime(2024, 2, 29, 8, 30, 0, 125000)
    assert json_field(ts, data_type("TIMESTAMP(3)")) == "2024-02-29T08:30:00.125"
    assert json_field(ts.replace(microsecond=0), data_type("TIMESTAMP(3)")) == \
        "2024-02-29T08:30:00"
    utc = ts.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert json_field(utc, data_type("TIMESTAMP_LTZ(3)")) == "2024-02-29T06:30:00.125Z"
    assert json_field(datetime.date(2024, 2, 29), data_type("DATE")) == "2024-02-29"
    assert json_field(datetime.time(8, 30, 1), data_type("TIME(0)")) == "08:30:01"
    assert json_field(decimal.Decimal("12.50"), data_type("DECIMAL(6, 2)")) == 12.5
    assert json_field(decimal.Decimal("12345678901234567890.12"),
                      data_type("DECIMAL(22, 2)")) == "12345678901234567890.12"
    assert json_field(b"\x00\xff", data_type("BYTES")) == "AP8="
    assert json_field({"a": 1, None: 2}, data_type("MAP<STRING, INT>")) == {"a": 1, "null": 2}
    assert json_field(Row(1, "x"), data_type("ROW<a INT, b STRING>")) == {"a": 1, "b": "x"}
    assert json_field([1, None], data_type("ARRAY<INT>")) == [1, None]
    assert json_field(float("nan"), data_type("DOUBLE")) == "NaN"


def test_a_result_in_both_row_formats() -> None:
    rows = [(RowKind.INSERT, ["x", 1, True]), (RowKind.UPDATE_BEFORE, ["x", 1, None])]
    info = result_info(["w", "n", "b"], ["STRING", "BIGINT NOT NULL", "BOOLEAN"], rows,
                       RowFormat.JSON)
    assert info["rowFormat"] == "JSON"
    assert [c["name"] for c in info["columns"]] == ["w", "n", "b"]
    assert all(c["comment"] is None for c in info["columns"])
    assert info["data"] == [{"kind": "INSERT", "fields": ["x", 1, True]},
                            {"kind": "UPDATE_BEFORE", "fields": ["x", 1, None]}]
    text = result_info(["w", "n", "b"], ["STRING", "BIGINT", "BOOLEAN"], rows,
                       RowFormat.PLAIN_TEXT)
    assert text["data"][0]["fields"] == ["x", "1", "TRUE"] and \
        text["data"][1]["fields"][2] is None


def test_the_token_protocol() -> None:
    async def run() -> None:
        batches: list[list[Any] | None] = [[(RowKind.INSERT, [1])], [], None]

        async def pull() -> list[Any] | None:
            return batches.pop(0)

        fetcher = ResultFetcher(ResultSchema(["a"], ["INT"]), pull)
        with pytest.raises(GatewayError, match="Expecting token to be 0, but found 1."):
            await fetcher.fetch(1)
        first = await fetcher.fetch(0)
        assert (first.result_type, first.rows, first.next_token) == (
            ResultType.PAYLOAD, [(RowKind.INSERT, [1])], 1)
        again = await fetcher.fetch(0)  # the last token again: the same batch
        assert again.rows == first.rows and again.next_token == 1
        empty = await fetcher.fetch(1)  # a running query with nothing new
        assert (empty.result_type, empty.rows, empty.next_token) == (ResultType.PAYLOAD, [], 2)
        with pytest.raises(GatewayError, match="Expecting token to be 2 or 1, but found 0.") \
                as error:
            await fetcher.fetch(0)
        assert error.value.status == 400
        end = await fetcher.fetch(2)
        assert end.result_type is ResultType.EOS and end.next_token is None
        assert (await fetcher.fetch(2)).result_type is ResultType.EOS

    asyncio.run(run())


def test_a_large_result_comes_in_batches() -> None:
    async def run() -> None:
        rows = [(RowKind.INSERT, [i]) for i in range(MAX_FETCH_ROWS * 2 + 1)]
        fetcher = ResultFetcher.of_rows(ResultSchema(["i"], ["INT"]), rows)
        got, token = [], 0
        while True:
            batch = await fetcher.fetch(token)
            if batch.result_type is ResultType.EOS:
                break
            assert len(batch.rows) <= MAX_FETCH_ROWS
            got += batch.rows
            token = batch.next_token
        assert got == rows and token == 3

    asyncio.run(run())


def test_operation_transitions_are_flink_s() -> None:
    for status in OperationStatus:
        if status is not OperationStatus.CLOSED:
            assert OperationStatus.CLOSED in OPERATION_TRANSITIONS[status]
    assert OperationStatus.CANCELED not in OPERATION_TRANSITIONS[OperationStatus.FINISHED]
    assert OPERATION_TRANSITIONS[OperationStatus.CLOSED] == set()
    assert OperationStatus.FINISHED in OPERATION_TRANSITIONS[OperationStatus.RUNNING]


def test_set_and_reset_change_only_their_gateway_session() -> None:
    async def run() -> None:
        service = SqlGatewayService(SERVICES)
        a, b = service.open_session("a", {"k": "1"}), service.open_session(None, None)

        async def rows(handle: str, statement: str) -> list[Any]:
            op = service.execute(handle, statement)
            await op.wait()
            assert op.status is OperationStatus.FINISHED, op.error
            return (await op.fetch(0)).rows

        assert await rows(a, "SET 'pipeline.name' = 'x'") == [(RowKind.INSERT, ["OK"])]
        assert service.configuration(a)["pipeline.name"] == "x"
        assert "pipeline.name" not in service.configuration(b)
        listed = dict(tuple(values) for _, values in await rows(a, "SET"))
        assert listed == {"execution.runtime-mode": "streaming", "k": "1", "pipeline.name": "x"}
        await rows(a, "RESET 'k'")
        assert "k" not in service.configuration(a)
        await rows(a, "RESET")
        assert service.configuration(a) == {"execution.runtime-mode": "streaming"}
        service.close()

    asyncio.run(run())


def test_unknown_sessions_and_bad_requests() -> None:
    async def run() -> None:
        service = SqlGatewayService(SERVICES)
        with pytest.raises(GatewayError, match="Session 'nope' does not exist.") as error:
            service.session("nope")
        assert error.value.status == 404
        h = service.open_session(None, None)
        with pytest.raises(GatewayError) as error:
            service.operation(h, "nope")
        assert error.value.status == 404
        for bad in ("", None, 3):
            with pytest.raises(GatewayError) as error:
                service.execute(h, bad)
            assert error.value.status == 400
        with pytest.raises(GatewayError):
            service.execute(h, "SELECT 1", timeout_ms=-1)
        with pytest.raises(GatewayError):
            service.open_session(None, ["not", "an", "object"])  # type: ignore[arg-type]
        service.close()

    asyncio.run(run())


def test_idle_sessions_are_closed() -> None:
    async def run() -> None:
        service = SqlGatewayService(SERVICES, idle_timeout_s=10.0)
        old, fresh = service.open_session(None, None), service.open_session(None, None)
        service.sessions[old].last_access -= 60.0
        assert service.expire_idle() == [old]
        assert list(service.sessions) == [fresh]
        service.close()

    asyncio.run(run())


def test_the_sql_client_reads_column_widths_from_the_logical_types() -> None:
    from sessioncluster.client.sqlclient import type_text

    for text in ("INT", "BIGINT NOT NULL", "DECIMAL(10, 2)", "TIMESTAMP(3)", "TIMESTAMP_LTZ(6)",
                 "TIME(0)", "STRING", "BOOLEAN"):
        back = type_text(logical_type_json(data_type(text)))
        root = text.split("(")[0].split(" ")[0].replace("STRING", "VARCHAR")
        assert back.startswith(root), (text, back)
    assert type_text(logical_type_json(data_type("TIMESTAMP(3)"))) == "TIMESTAMP(3)"
    assert type_text(logical_type_json(data_type("DECIMAL(10, 2)"))) == "DECIMAL(10)"
