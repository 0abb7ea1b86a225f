"""``MATCH_RECOGNIZE`` (Flink SQL's pattern recognition) in BATCH and over bounded sources.

A ``SELECT ... FROM t MATCH_RECOGNIZE (...) AS T`` is planned in two steps. Its input's rows are
grouped by the PARTITION BY columns and each partition's rows, in ORDER BY order (ties in input
order), are matched in Python (:mod:`.patternmatch`, DEFINE conditions by :mod:`.matchexpr`);
each match gives the values of the atoms its MEASURES read (``LAST(A.price)``, ``AVG(A.price)``,
...). Spark then computes the measures from them, typed as Spark infers them, into a temporary
view of ONE ROW PER MATCH: the PARTITION BY columns, then the MEASURES. The query reads that view
in place of the MATCH_RECOGNIZE, as any table. The rows are in the order Flink's streaming job
emits them at parallelism 1: by the row that completed each match.
"""

from __future__ import annotations

import datetime
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from sqlglot import exp

from .builtins import SUB_DAY_UNITS, is_timestampadd, timestampadd_of_date
from .dialect import output_name
from .matchexpr import Atom, atom_value, compile_condition, extract_atoms
from .model import FlinkSqlError
from .patternmatch import (
    Assigned,
    Element,
    MatchState,
    PatternError,
    Skip,
    check_skip,
    feed,
    parse_pattern,
)
from .planner import interval_ms

#: the temporary views of the matches are named with this prefix
VIEW_PREFIX = "__match_recognize_"
_EPOCH = datetime.datetime(1970, 1, 1)
_views = itertools.count()


@dataclass(slots=True)
class MatchPlan:
    """A MATCH_RECOGNIZE clause, read."""

    partition: list[str]
    order: list[str]
    elements: list[Element]
    skip: Skip
    within_ms: int | None
    #: each variable's condition over the atoms ``define_atoms`` (a variable not here: true)
    define: dict[str, exp.Expr]
    define_atoms: list[Atom]
    measure_atoms: list[Atom]
    #: the measures' names and expressions over the atoms' columns ``__atom<k>``
    measures: list[tuple[str, exp.Expr]]
    alias: str | None


def find_match_recognize(query: exp.Expr) -> exp.MatchRecognize | None:
    """The first MATCH_RECOGNIZE clause of ``query``, if any."""
    return query.find(exp.MatchRecognize)


def unbounded_refusal() -> str:
    """Why a MATCH_RECOGNIZE over an unbounded source is refused where it is not planned on
    keyed state."""
    return ("MATCH_RECOGNIZE over an unbounded source is not supported by sessioncluster here: "
            "it runs in BATCH mode, and in STREAMING mode on keyed state (Flink docs: "
            "Pattern Recognition)")


def read_plan(node: exp.MatchRecognize) -> MatchPlan:
    """The plan of a MATCH_RECOGNIZE clause; FlinkSqlError for what is not supported."""
    rows = node.text("rows") or "ONE ROW PER MATCH"
    if rows != "ONE ROW PER MATCH":
        raise FlinkSqlError(f"MATCH_RECOGNIZE's {rows} is not supported by sessioncluster "
                            "(Flink supports ONE ROW PER MATCH only)")
    partition = [_column_name(c, "PARTITION BY") for c in node.args.get("partition_by") or []]
    order_node = node.args.get("order")
    order = []
    for ordered in order_node.expressions if order_node else []:
        if ordered.args.get("desc"):
            raise FlinkSqlError("MATCH_RECOGNIZE must be ordered by a time attribute ascending "
                                "first; DESC is not supported by sessioncluster")
        order.append(_column_name(ordered.this, "ORDER BY"))
    if not order:
        raise FlinkSqlError("You must specify either rowtime or proctime for order by as the "
                            "first one.")
    try:
        elements = parse_pattern(node.text("pattern"))
        skip = _skip(node.text("after") or "AFTER MATCH SKIP PAST LAST ROW")
        check_skip(elements, skip)
    except PatternError as e:
        raise FlinkSqlError(str(e)) from None
    within = node.args.get("within")
    define_atoms: list[Atom] = []
    define = {}
    for item in node.args.get("define") or []:
        condition = extract_atoms(item.this, define_atoms, _placeholder, order[0])
        compile_condition(condition)  # refused now, not on the workers
        define[item.alias] = condition
    measure_atoms: list[Atom] = []
    measures = []
    for i, measure in enumerate(node.args.get("measures") or []):
        item = measure.this
        _check_variables(item, {e.variable for e in elements})
        name = output_name(item, len(partition) + i)
        body = item.this if isinstance(item, exp.Alias) else item
        measures.append((name, extract_atoms(body, measure_atoms, _placeholder, order[0])))
    alias = node.args.get("alias")
    return MatchPlan(partition, order, elements, skip,
                     interval_ms(within) if within is not None else None, define, define_atoms,
                     measure_atoms, measures, alias.name if alias is not None else None)


def _check_variables(node: exp.Expr, variables: set[str]) -> None:
    """FlinkSqlError, in Flink's words, for a column of a variable not in the pattern."""
    for column in node.find_all(exp.Column):
        table = column.args.get("table")
        if table is not None and column.table not in variables:
            at = table.meta
            where = f"At line {at['line']}, column {at['col'] - len(column.table) + 1}: " \
                if "line" in at else ""
            raise FlinkSqlError(f"SQL validation failed. {where}Table '{column.table}' not found")


def _placeholder(k: int) -> exp.Expr:
    return exp.column(f"__atom{k}")


def _column_name(node: exp.Expr, clause: str) -> str:
    if not isinstance(node, exp.Column):
        raise FlinkSqlError(f"MATCH_RECOGNIZE's {clause} takes columns, not {node.sql()}")
    return node.name


def _skip(text: str) -> Skip:
    words = text.split()[3:]  # after AFTER MATCH SKIP
    if words[:2] in (["TO", "FIRST"], ["TO", "LAST"]):
        return Skip(" ".join(words[:2]), words[2])
    return Skip(" ".join(words))


#: ``keyed(frame, plan, schema)``: the matches of an unbounded ``frame`` as a stream of rows of
#: ``schema`` (:mod:`.matchstream`)
Keyed = Callable[[Any, MatchPlan, Any], Any]


def rewrite(query: exp.Expr, run: Callable[[exp.Expr], Any], keyed: Keyed | None = None
            ) -> exp.Expr:
    """``query`` with each ``FROM x MATCH_RECOGNIZE (...)`` reading a temporary view of its
    matches; ``run(tree)`` is a query's DataFrame (its names resolved as the query's), a
    streaming one matched by ``keyed``."""
    if find_match_recognize(query) is None:
        return query
    query = query.copy()
    for select in list(query.find_all(exp.Select)):
        node = select.args.get("match")
        if node is None:
            continue
        plan = read_plan(node)
        source = select.args["from_"].this
        if isinstance(source, exp.Table) and source.alias:  # the input's alias is not the
            source = source.copy()                          # output's
            source.set("alias", None)
        view = matches_view(run(exp.select("*").from_(source.copy())), plan, run, keyed)
        table = exp.Table(this=exp.to_identifier(view))
        if plan.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(plan.alias)))
        select.set("match", None)
        select.set("from_", exp.From(this=table))
    return query


def matches_view(frame: Any, plan: MatchPlan, run: Callable[[exp.Expr], Any],
                 keyed: Keyed | None = None) -> str:
    """The name of a new temporary view of the matches of ``frame``'s rows: the PARTITION BY
    columns then the MEASURES, in the order the matches were completed (a streaming
    ``frame``: matched by ``keyed``, as the watermark passes its rows)."""
    from pyspark.sql.types import DateType, LongType, StructField, StructType

    fields = {f.name: f for f in frame.schema.fields}
    for name in plan.partition + plan.order:
        if name not in fields:
            raise FlinkSqlError(f"Column '{name}' not found in MATCH_RECOGNIZE's input")
    for condition in plan.define.values():
        check_comparisons(condition, {f"__atom{k}" for k, a in enumerate(plan.define_atoms)
                                      if a.column in fields
                                      and isinstance(fields[a.column].dataType, DateType)})
    atom_fields = [StructField(f"__atom{k}", LongType()) if a.kind == "COUNT" else
                   StructField(f"__atom{k}", _field(fields, a.column).dataType, True,
                               _field(fields, a.column).metadata)  # its declared Flink type
                   for k, a in enumerate(plan.measure_atoms)]
    raw_schema = StructType([fields[p] for p in plan.partition] + atom_fields + [
        StructField("__at", fields[plan.order[0]].dataType), StructField("__seq", LongType()),
        StructField("__n", LongType())])
    if frame.isStreaming:
        if keyed is None:
            raise FlinkSqlError(unbounded_refusal())
        raw = keyed(frame, plan, raw_schema)
    else:
        names = list(frame.columns)
        match_partition = _PartitionMatcher(plan, names)
        rows = frame.rdd.zipWithIndex().map(
            lambda pair: (tuple(pair[0][names.index(p)] for p in plan.partition), pair))
        matched = rows.groupByKey().flatMap(match_partition)
        raw = frame.sparkSession.createDataFrame(matched, raw_schema)
    raw_name = f"{VIEW_PREFIX}raw_{next(_views)}"
    raw.createOrReplaceTempView(raw_name)
    dates = {f.name for f in atom_fields if isinstance(f.dataType, DateType)}
    select = exp.select(*[exp.column(p, quoted=True) for p in plan.partition],
                        *[exp.alias_(flink_dated(e, dates), n, quoted=True)
                          for n, e in plan.measures]) \
        .from_(raw_name)
    if not frame.isStreaming:  # a stream's matches come in the order they complete
        select = select.order_by("__at", "__seq", "__n")
    name = f"{VIEW_PREFIX}{next(_views)}"
    run(select).createOrReplaceTempView(name)
    return name


_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<",
                exp.LTE: "<="}


def check_comparisons(condition: exp.Expr, dates: set[str]) -> None:
    """FlinkSqlError, in Flink's words, for a DEFINE comparing a TIMESTAMPADD of a DATE by
    SECOND, MINUTE or HOUR (Flink's TIMESTAMP(6)) with a DATE; ``dates``: the atoms' columns
    of type DATE."""
    def kind(node: exp.Expr) -> str | None:
        if isinstance(node, exp.Column) and node.name in dates or \
                isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE):
            return "DATE"
        if is_timestampadd(node) and node.expressions[0].name.upper() in SUB_DAY_UNITS \
                and kind(node.expressions[2]) == "DATE":
            return "TIMESTAMP(6)"
        return None

    for comparison in condition.find_all(*_COMPARISONS):
        sides = {kind(comparison.this), kind(comparison.expression)}
        if sides == {"DATE", "TIMESTAMP(6)"}:
            op = _COMPARISONS[type(comparison)]
            raise FlinkSqlError(
                f"SQL validation failed. Cannot apply '{op}' to arguments of type "
                f"'<{kind(comparison.this)}> {op} <{kind(comparison.expression)}>'. Supported "
                f"form(s): '<COMPARABLE_TYPE> {op} <COMPARABLE_TYPE>'")


def flink_dated(measure: exp.Expr, dates: set[str]) -> exp.Expr:
    """``measure`` (over the atoms' columns) with each ``TIMESTAMPADD`` of a DATE typed as
    Flink's (Spark's is a TIMESTAMP WITH LOCAL TIME ZONE by any unit): a DATE by DAY, WEEK,
    MONTH, QUARTER or YEAR, a TIMESTAMP from the date's midnight by SECOND, MINUTE or HOUR;
    ``dates``: the atoms' columns of type DATE."""
    def is_date(node: exp.Expr) -> bool:
        return isinstance(node, exp.Column) and node.name in dates or \
            isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE)

    def retype(node: exp.Expr) -> exp.Expr:
        if not (is_timestampadd(node) and is_date(node.expressions[2])):
            return node
        return timestampadd_of_date(node)

    return measure.transform(retype)


def _field(fields: dict[str, Any], column: str | None) -> Any:
    if column not in fields:
        raise FlinkSqlError(f"Column '{column}' not found in MATCH_RECOGNIZE's input")
    return fields[column]


class _PartitionMatcher:
    """The matches of one partition's rows (run on Spark's workers): each the partition's key,
    the measures' atoms, the completing row's time and input position, the match's number."""

    def __init__(self, plan: MatchPlan, names: list[str]) -> None:
        self.plan = plan
        self.names = names

    def __call__(self, group: tuple[Any, Iterable[tuple[Any, int]]]) -> Iterator[tuple]:
        key, pairs = group
        position = {n: i for i, n in enumerate(self.names)}
        order = [position[n] for n in self.plan.order]
        ordered = sorted(pairs, key=lambda p: (tuple(p[0][i] for i in order), p[1]))
        rows = [dict(zip(self.names, r)) for r, _ in ordered]
        rowtime = self.plan.order[0]
        for n, (match, atoms) in enumerate(partition_matches(self.plan, rows)):
            last = match[-1][0]
            yield (*key, *atoms, rows[last][rowtime], ordered[last][1], n)


def partition_matches(plan: MatchPlan, rows: Sequence[Mapping[str, Any]]
                      ) -> list[tuple[tuple[Assigned, ...], list[Any]]]:
    """The matches of one partition's ``rows`` (in ORDER BY order), each with the values of
    the measures' atoms."""
    return resume_matches(plan, MatchState(), dict(enumerate(rows)), len(rows))


def resume_matches(plan: MatchPlan, state: MatchState, rows: Mapping[int, Mapping[str, Any]],
                   until: int) -> list[tuple[tuple[Assigned, ...], list[Any]]]:
    """The matches the partition's rows ``state.next_row..until-1`` complete (``rows`` by their
    position: those and the ones ``state`` still holds), each with the values of the measures'
    atoms; ``state`` brought up to ``until``."""
    conditions = {v: compile_condition(c) for v, c in plan.define.items()}

    def condition(variable: str, row: int, assigned: tuple[Assigned, ...]) -> bool:
        test = conditions.get(variable)
        if test is None:
            return True
        matched = assigned + ((row, variable),)
        return test([atom_value(a, matched, rows.__getitem__)
                     for a in plan.define_atoms]) is True

    times = {i: _ms(r[plan.order[0]]) for i, r in rows.items()} \
        if plan.within_ms is not None else None
    try:
        matches = feed(state, until, plan.elements, condition, plan.skip, times, plan.within_ms)
    except PatternError as e:
        raise FlinkSqlError(str(e)) from None
    return [(m, [atom_value(a, m, rows.__getitem__) for a in plan.measure_atoms])
            for m in matches]


def _ms(value: Any) -> int:
    if isinstance(value, datetime.datetime):
        return round((value.replace(tzinfo=None) - _EPOCH).total_seconds() * 1000)
    return int(value)
