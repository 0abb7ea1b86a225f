"""The temporal join's pure parts, without Spark: finding it in a query (Flink's errors for what
Flink rejects), and a key's state in the keyed processor, against an as-of join in plain
Python."""

from __future__ import annotations

import bisect
import random

import pytest

from sessioncluster.spark.flinksql.model import CatalogTable, Column, FlinkSqlError, WatermarkSpec
from sessioncluster.spark.flinksql.statements import parse_statement
from sessioncluster.spark.flinksql.temporaljoin import JoinState, find_temporal_join

ORDERS = CatalogTable("orders", [Column("id", "STRING"), Column("cur", "STRING"),
                                 Column("ts", "TIMESTAMP(3)"),
                                 Column("pt", None, "PROCTIME()")],
                      watermark=WatermarkSpec("ts", "ts"))
RATES = CatalogTable("rates", [Column("cur", "STRING"), Column("rate", "DOUBLE"),
                               Column("ts", "TIMESTAMP(3)")],
                     watermark=WatermarkSpec("ts", "ts"), primary_key=["cur"])
SCHEMAS = {"orders": ORDERS, "rates": RATES,
           "rates_nopk": CatalogTable("rates_nopk", RATES.columns, watermark=RATES.watermark),
           "rates_notime": CatalogTable("rates_notime", RATES.columns, primary_key=["cur"])}


def find(sql: str):  # type: ignore[no-untyped-def]
    return find_temporal_join(parse_statement(sql).ast, SCHEMAS)


def test_the_join_its_keys_and_other_conditions() -> None:
    assert find("SELECT * FROM orders AS o JOIN rates AS r ON o.cur = r.cur") is None
    join = find("SELECT o.id FROM orders AS o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
                "ON r.cur = o.cur AND r.rate > 1")
    assert join is not None and join.outer
    assert (join.probe_alias, join.versioned_alias, join.versioned.name) == ("o", "r", "rates")
    assert [(p.sql(), v.sql()) for p, v in join.keys] == [("o.cur", "r.cur")]
    assert join.residual is not None and join.residual.sql() == "r.rate > 1"
    inner = find("SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
                 "ON o.cur = r.cur")
    assert inner is not None and not inner.outer and inner.residual is None


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT o.id FROM orders AS o JOIN rates_nopk FOR SYSTEM_TIME AS OF o.ts AS r "
     "ON o.cur = r.cur", "requires primary key in versioned table"),
    ("SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
     "ON o.id = r.rate", "requires primary key in versioned table"),
    ("SELECT o.id FROM orders AS o JOIN rates_notime FOR SYSTEM_TIME AS OF o.ts AS r "
     "ON o.cur = r.cur", "no row time attribute can be found"),
    ("SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.pt AS r "
     "ON o.cur = r.cur", "Processing-time temporal join is not supported yet"),
    ("SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.id AS r "
     "ON o.cur = r.cur", "only supports 'FOR SYSTEM_TIME AS OF' left table's time attribute"),
    ("SELECT o.id FROM orders AS o RIGHT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
     "ON o.cur = r.cur", "only supports INNER JOIN and LEFT JOIN"),
    ("SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
     "ON o.cur = r.cur JOIN rates AS x ON x.cur = o.cur", "only join of its SELECT"),
])
def test_flinks_errors(sql: str, message: str) -> None:
    with pytest.raises(FlinkSqlError, match=message):
        find(sql)


def plain_as_of(probes: list[tuple[int, str]], versions: list[tuple[int, float]],
                outer: bool) -> list[tuple[str, float | None]]:
    out = []
    for t, name in sorted(probes):
        valid = [v for v in sorted(versions) if v[0] <= t]
        if valid:
            out.append((name, valid[-1][1]))
        elif outer:
            out.append((name, None))
    return out


@pytest.mark.parametrize("outer", [False, True])
def test_a_keys_state_joins_each_probe_row_with_its_version_once(outer: bool) -> None:
    """Rows of one key arrive in random micro-batches, the watermark trailing the largest time
    seen; every probe row comes out once, when the watermark passes it, with the version that
    was valid at its time (versions arrive in time order, as a watermark lets them)."""
    rng = random.Random(7)
    versions = [(t, float(t)) for t in sorted(rng.sample(range(0, 1000), 30))]
    probes = [(t, f"p{i}") for i, t in enumerate(rng.sample(range(0, 1000), 60))]
    state = JoinState([], [])
    out: list[tuple[object, ...]] = []
    events = sorted([(t, 1, (None, v)) for t, v in versions]
                    + [(t, 0, (name, None)) for t, name in probes], key=lambda e: e[0])
    watermark = -1
    while events:
        n = rng.randint(1, 8)
        batch, events = events[:n], events[n:]
        state.add([s for _, s, _ in batch], [t for t, _, _ in batch], [r for _, _, r in batch], 1)
        watermark = max(watermark, batch[-1][0] - rng.randint(0, 20))
        out += state.join(watermark, outer, 1)
    out += state.join(10**9, outer, 1)  # the final watermark
    assert [(name, rate) for name, rate in out] == plain_as_of(probes, versions, outer)
    assert not state.pending and len(state.versions) == 1  # older versions cleaned


def test_a_version_at_the_same_time_replaces_the_one_before() -> None:
    state = JoinState([], [])
    state.add([1, 1, 0], [5, 5, 7], [(None, 1.0), (None, 2.0), ("a", None)], 1)
    assert state.join(10, False, 1) == [("a", 2.0)]
    times = [t for t, _ in state.versions]
    assert times == sorted(times) and bisect.bisect_right(times, 10) == 1
