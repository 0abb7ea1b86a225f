"""Flink's regular join of two changelogs (changelogjoin): its changes, applied, are the join of
both sides' current rows after every change, for each join type; and its RowKinds are Flink's."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import sqlglot

from sessioncluster.spark.flinksql.changelogjoin import JoinSpec, KeyRows, join_changes
from sessioncluster.spark.flinksql.joincondition import pair_condition
from sessioncluster.spark.flinksql.temporaljoin import JoinNames

Row = tuple


def _plain_join(left: Counter, right: Counter, spec: JoinSpec, residual=None) -> Counter:
    """The join of the current rows, in plain Python (key: the first column; ``residual``:
    the rest of the condition on a pair)."""
    def joins(lrow, rrow) -> bool:
        return lrow[0] == rrow[0] and lrow[0] is not None and (
            residual is None or residual(lrow, rrow))

    out: Counter = Counter()
    for lrow, lc in left.items():
        matches = [(r, c) for r, c in right.items() if joins(lrow, r)]
        for r, c in matches:
            out[lrow + r] += lc * c
        if not matches and spec.left_outer:
            out[lrow + (None,) * spec.right_width] += lc
    if spec.right_outer:
        for rrow, rc in right.items():
            if not any(joins(x, rrow) for x in left):
                out[(None,) * spec.left_width + rrow] += rc
    return +out


def _apply(result: Counter, changes: list[tuple[str, Row]]) -> None:
    for kind, row in changes:
        result[row] += 1 if kind in ("+I", "+U") else -1
        assert result[row] >= 0, f"{kind}{row} retracts a row not emitted"


def _random_change(rng: random.Random, rows: Counter, updating: bool) -> list[tuple[str, Row]]:
    """A valid change of one side: an append-only side inserts, an updating one (keyed by its
    first column, as an aggregate) inserts a new key, updates (-U/+U) or deletes one."""
    key = rng.choice(["a", "b", "c", None])
    if not updating:
        return [("+I", (key, rng.randint(1, 3)))]
    current = next((r for r in rows if r[0] == key), None)
    if current is None:
        return [("+I", (key, rng.randint(1, 3)))]
    if rng.random() < 0.2:
        return [("-D", current)]
    return [("-U", current), ("+U", (key, current[1] + 1))]


@pytest.mark.parametrize("left_outer,right_outer", [(False, False), (True, False),
                                                   (False, True), (True, True)])
@pytest.mark.parametrize("left_updating,right_updating", [(True, False), (True, True)])
@pytest.mark.parametrize("residual", [None, (
    "l.v >= r.w AND NOT r.w IN (3, 9)",
    lambda lrow, rrow: lrow[1] >= rrow[1] and rrow[1] not in (3, 9))])
def test_applied_changes_equal_the_join_of_the_current_rows(left_outer, right_outer,
                                                            left_updating, right_updating,
                                                            residual):
    condition = None
    if residual is not None:
        names = JoinNames("l", "r", ["k", "v"], ["k", "w"])
        terms = [sqlglot.parse_one(residual[0])]
        condition = pair_condition(terms, names)
    spec = JoinSpec(2, 2, left_outer, right_outer, condition)
    for seed in range(30):
        rng = random.Random(seed)
        left: Counter = Counter()
        right: Counter = Counter()
        states: dict = {}
        result: Counter = Counter()
        for _ in range(8):  # micro-batches of changes, per key in their order
            batch = []
            for _ in range(rng.randint(1, 6)):
                from_left = rng.random() < 0.5
                side = left if from_left else right
                for kind, row in _random_change(rng, side, left_updating if from_left
                                                else right_updating):
                    side[row] += 1 if kind in ("+I", "+U") else -1
                    side += Counter()  # drop rows gone
                    batch.append((from_left, kind, row))
            for key in {row[0] for _, _, row in batch}:
                changes = [c for c in batch if c[2][0] == key]
                state = states.setdefault(key, KeyRows())
                _apply(result, join_changes(spec, state, changes, null_key=key is None))
            assert +result == _plain_join(left, right, spec,
                                          residual and residual[1]), seed


def test_inner_join_keeps_the_input_row_kind():
    """Flink 2.3: an update of the aggregate side of an inner join emits -U/+U per match."""
    spec = JoinSpec(1, 2)
    state = KeyRows()
    changes = [(True, "+I", ("a",)), (False, "+I", ("a", 1)), (True, "+I", ("a",)),
               (False, "-U", ("a", 1)), (False, "+U", ("a", 2))]
    assert join_changes(spec, state, changes) == [
        ("+I", ("a", "a", 1)), ("+I", ("a", "a", 1)),
        ("-U", ("a", "a", 1)), ("-U", ("a", "a", 1)),
        ("+U", ("a", "a", 2)), ("+U", ("a", "a", 2))]


def test_left_join_pads_and_retracts_as_flink():
    """Flink 2.3's changes for orders LEFT JOIN (an aggregate) when the aggregate's row comes,
    updates: +I[1, null], -D[1, null], +I[1, 1], -U[1, 1], +I[1, null], -D[1, null], +I[1, 2]."""
    spec = JoinSpec(1, 2, left_outer=True)
    state = KeyRows()
    changes = [(True, "+I", (1,)), (False, "+I", ("a", 1)), (False, "-U", ("a", 1)),
               (False, "+U", ("a", 2))]
    assert join_changes(spec, state, changes) == [
        ("+I", (1, None, None)), ("-D", (1, None, None)), ("+I", (1, "a", 1)),
        ("-U", (1, "a", 1)), ("+I", (1, None, None)), ("-D", (1, None, None)),
        ("+I", (1, "a", 2))]


def test_a_left_join_with_a_non_equi_condition_pads_as_flink():
    """Flink 2.3's changes for key 'a' of orders (id, customer, amount) LEFT JOIN (customer,
    COUNT(*) AS n) ON o.customer = c.customer AND o.amount > c.n: the order whose amount is not
    above n stays padded; the other is retracted (-U) and padded again as n changes."""
    names = JoinNames("o", "c", ["id", "customer", "amount"], ["customer", "n"])
    condition = pair_condition([sqlglot.parse_one("o.amount > c.n")], names)
    spec = JoinSpec(3, 2, left_outer=True, condition=condition)
    changes = [(True, "+I", (1, "a", 5)), (True, "+I", (3, "a", 1)), (False, "+I", ("a", 1)),
               (False, "-U", ("a", 1)), (False, "+U", ("a", 2))]
    assert join_changes(spec, KeyRows(), changes) == [
        ("+I", (1, "a", 5, None, None)), ("+I", (3, "a", 1, None, None)),
        ("-D", (1, "a", 5, None, None)), ("+I", (1, "a", 5, "a", 1)),
        ("-U", (1, "a", 5, "a", 1)), ("+I", (1, "a", 5, None, None)),
        ("-D", (1, "a", 5, None, None)), ("+I", (1, "a", 5, "a", 2))]


def test_a_condition_meets_its_operands_as_flinks_implicit_casts():
    """A text literal against a TIMESTAMP or DATE column is that type's value (it failed with a
    TypeError: datetime > str), a typed literal its value, a DOUBLE times a DECIMAL literal a
    DOUBLE (Decimal * float failed)."""
    import datetime as dt

    names = JoinNames("o", "c", ["k", "ts", "amount"], ["k", "day", "n"])

    def joins(condition: str, left: tuple, right: tuple) -> bool:
        return pair_condition([sqlglot.parse_one(condition, read="flink")], names)(left, right)

    left = ("a", dt.datetime(2024, 1, 1, 10, 0, 5), 7.5)
    right = ("a", dt.date(2024, 1, 1), 5)
    assert joins("o.ts > '2024-01-01 10:00:00'", left, right)
    assert joins("'2024-01-02' > c.day", left, right)
    assert joins("c.day = '2024-01-01' AND o.ts < TIMESTAMP '2024-01-01 10:00:06'", left, right)
    assert joins("c.day >= CAST('2023-12-31' AS DATE)", left, right)
    assert joins("o.amount > c.n * 1.4", left, right) and not joins("o.amount > c.n * 1.5",
                                                                     left, right)
    assert joins("o.amount * 1.5 > 11.2", left, right)
    assert not joins("o.ts > '2024-01-01 10:00:00'", ("a", None, 1.0), right)  # UNKNOWN


def test_a_condition_calls_like_and_month_arithmetic_as_define_does():
    """The join's condition runs sqlfunctions' LIKE and TIMESTAMPADD by MONTH, as
    MATCH_RECOGNIZE's DEFINE does (test_flinksql_match_define: Flink 2.3's answers)."""
    import datetime as dt

    names = JoinNames("o", "c", ["k", "ts", "name"], ["k", "since"])

    def joins(condition: str, left: tuple, right: tuple) -> bool:
        return pair_condition([sqlglot.parse_one(condition, read="flink")], names)(left, right)

    left = ("a", dt.datetime(2024, 2, 29, 10), "a%z")
    right = ("a", dt.datetime(2024, 1, 31, 10))
    assert joins("o.ts = TIMESTAMPADD(MONTH, 1, c.since)", left, right)
    assert not joins("o.ts = TIMESTAMPADD(DAY, 30, c.since)", left, right)
    assert joins("o.name LIKE 'a!%%' ESCAPE '!' AND o.name NOT LIKE 'a!%x' ESCAPE '!'", left, right)
    assert not joins("o.name LIKE 'a!%%' ESCAPE '!'", ("a", None, None), right)  # UNKNOWN
