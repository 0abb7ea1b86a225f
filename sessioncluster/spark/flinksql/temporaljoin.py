"""Flink's event-time temporal join in STREAMING mode: ``probe JOIN versioned FOR SYSTEM_TIME
AS OF probe.rowtime ON probe.k = versioned.pk``, each probe row joined with the version of the
versioned table's row (its primary key's) that was valid at the probe row's time.

Spark has no as-of join of two streams. Over unbounded tables both inputs become one stream,
keyed by the join's equality keys, into a ``transformWithStateInPandas`` processor in event-time
mode (:func:`temporal_join_processor`): per key it keeps the versions (the versioned table's
rows by their time) and the probe rows not joined yet. Once the watermark (Spark's of the union:
the smaller of both inputs', as Flink's) passes a probe row's time, the row is joined with the
latest version not after it and emitted (an inner join drops a row without one, a LEFT JOIN
pads it with nulls), and the versions older than the one valid at the watermark are dropped, as
Flink's ``TemporalRowTimeJoinOperator`` does. Over bounded tables (Flink's final watermark
joins every probe row) the same as-of join is one Spark batch join. The join's other conditions
apply to the version found (a LEFT JOIN pads a row whose version fails them). The result is
append-only.
"""

from __future__ import annotations

import bisect
import pickle
import secrets
from dataclasses import dataclass
from typing import Any, Iterator

from sqlglot import exp

from .model import CatalogTable, FlinkSqlError, table_named
from .planner import to_spark_sql

#: the probe's columns in the join's view are ``flink_l<i>``, the versioned table's ``flink_r<j>``
PROBE, VERSIONED = "flink_l", "flink_r"
_TIME, _SIDE = "flink_time", "flink_side"


@dataclass(slots=True)
class TemporalJoin:
    """A temporal join of a query: the select it is in, and what it joins."""

    select: exp.Select
    join: exp.Join
    probe: exp.Expr
    probe_alias: str
    versioned: CatalogTable
    versioned_alias: str
    #: the probe's time attribute (``AS OF`` it)
    time: exp.Column
    #: the equality conditions, (probe side, versioned side)
    keys: list[tuple[exp.Expr, exp.Expr]]
    #: the other conditions of ``ON``, None without any
    residual: exp.Expr | None
    outer: bool


def find_temporal_join(query: exp.Expr, schemas: dict[str, CatalogTable]
                       ) -> TemporalJoin | None:
    """The query's first temporal join (``FOR SYSTEM_TIME AS OF``); None without one.
    FlinkSqlError, with Flink's message, for one Flink rejects or this cannot run."""
    version = next(query.find_all(exp.Version), None)
    if version is None:
        return None
    table = version.parent
    join = table.parent if table is not None else None
    select = join.parent if isinstance(join, exp.Join) else None
    if not isinstance(table, exp.Table) or not isinstance(join, exp.Join) \
            or not isinstance(select, exp.Select) \
            or len(select.args.get("joins") or []) != 1 or select.args.get("from_") is None:
        raise FlinkSqlError("sessioncluster runs a temporal join as the only join of its "
                            "SELECT: FROM probe JOIN versioned FOR SYSTEM_TIME AS OF "
                            "probe.rowtime ON ... (Flink docs: Joins / Temporal Joins)")
    side = (join.args.get("side") or "").upper()
    if side not in ("", "LEFT") or (join.args.get("kind") or "").upper() not in ("", "INNER"):
        raise FlinkSqlError(f"Temporal table join currently only supports INNER JOIN and LEFT "
                            f"JOIN, not {side or join.args.get('kind')} JOIN")
    probe = select.args["from_"].this
    versioned = _catalog_table(schemas, table.name)
    time = version.expression
    if not isinstance(time, exp.Column):
        raise FlinkSqlError("Temporal table join currently only supports 'FOR SYSTEM_TIME AS "
                            "OF' left table's time attribute field")
    _check_time(probe, time, schemas)
    if versioned.watermark is None:
        raise FlinkSqlError("Event-Time Temporal Table Join requires both primary key and row "
                            "time attribute in versioned table, but no row time attribute can "
                            "be found.")
    alias = table.alias_or_name
    keys, residual = _split_condition(join.args.get("on"), alias, versioned)
    if not versioned.primary_key or {k.lower() for k in versioned.primary_key} \
            - {v.name.lower() for _, v in keys}:
        raise FlinkSqlError("Temporal Table Join requires primary key in versioned table, but "
                            "no primary key can be found.")
    return TemporalJoin(select, join, probe, probe.alias_or_name, versioned, alias, time, keys,
                        residual, side == "LEFT")


def _catalog_table(schemas: dict[str, CatalogTable], name: str) -> CatalogTable:
    found = table_named(schemas, name)
    if found is None:
        raise FlinkSqlError(f"sessioncluster runs a temporal join with a table of the catalog "
                            f"as its versioned table, not '{name}' (Flink docs: Versioned Tables)")
    return found


def _check_time(probe: exp.Expr, time: exp.Column, schemas: dict[str, CatalogTable]
                ) -> None:
    """The probe's ``AS OF`` column must be its rowtime (a proctime one is Flink's error)."""
    if not isinstance(probe, exp.Table):
        return  # a subquery's time attribute is Spark's to check (its watermark)
    table = _catalog_table(schemas, probe.name)
    column = next((c for c in table.columns if c.name.lower() == time.name.lower()), None)
    if column is not None and (column.expression or "").strip().upper() == "PROCTIME()":
        raise FlinkSqlError("Processing-time temporal join is not supported yet.")
    if table.watermark is None or table.watermark.rowtime.lower() != time.name.lower():
        raise FlinkSqlError("Temporal table join currently only supports 'FOR SYSTEM_TIME AS "
                            "OF' left table's time attribute field")


def _split_condition(on: exp.Expr | None, alias: str, versioned: CatalogTable
                     ) -> tuple[list[tuple[exp.Expr, exp.Expr]], exp.Expr | None]:
    """``ON``'s equalities between the probe and the versioned table, and the rest."""
    names = {c.name.lower() for c in versioned.columns}

    def is_versioned(e: exp.Expr) -> bool:
        columns = list(e.find_all(exp.Column))
        return bool(columns) and all(c.table.lower() == alias.lower() if c.table
                                     else c.name.lower() in names for c in columns)

    keys: list[tuple[exp.Expr, exp.Expr]] = []
    rest: list[exp.Expr] = []
    for term in (on.flatten() if isinstance(on, exp.And) else [on] if on is not None else []):
        if isinstance(term, exp.EQ) and is_versioned(term.expression) and not is_versioned(term.this):
            keys.append((term.this, term.expression))
        elif isinstance(term, exp.EQ) and is_versioned(term.this) and not is_versioned(term.expression):
            keys.append((term.expression, term.this))
        else:
            rest.append(term)
    return keys, exp.and_(*rest) if rest else None


def plan_temporal_join(session: Any, query: exp.Expr, schemas: dict[str, CatalogTable],
                       streaming: bool) -> exp.Expr:
    """``query`` with its temporal joins read from views of ``session`` (their rows, probe
    columns then versioned ones); ``query`` itself when it has none."""
    query = query.copy()
    while (found := find_temporal_join(query, schemas)) is not None:
        _replace(session, found, schemas, streaming)
    return query


def _replace(session: Any, join: TemporalJoin, schemas: dict[str, CatalogTable],
             streaming: bool) -> None:
    probe_names = session.sql(to_spark_sql(exp.select("*").from_(join.probe.copy()), schemas,
                                           streaming=streaming)).columns
    versioned_names = [c.name for c in join.versioned.columns]
    names = JoinNames(join.probe_alias, join.versioned_alias, probe_names, versioned_names)
    probe = _side_frame(session, join, schemas, streaming, names, versioned=False)
    versioned = _side_frame(session, join, schemas, streaming, names, versioned=True)
    frame = (_keyed_join(probe, versioned, join, len(probe_names), len(versioned_names))
             if streaming else _batch_join(probe, versioned, join, len(probe_names),
                                           len(versioned_names)))
    view = f"__flink_temporal_join_{secrets.token_hex(6)}"
    frame.createOrReplaceTempView(view)
    if join.residual is not None:  # the other conditions, on the version found
        view = _with_residual(session, view, names.rewrite(join.residual.copy()), join.outer,
                              len(probe_names), len(versioned_names))
    names.read_from(join.select, view)


class JoinNames:
    """The columns of a join's two sides as the view of its rows names them (``flink_l<i>``,
    ``flink_r<j>``), by the sides' aliases and column names."""

    def __init__(self, left_alias: str, right_alias: str, left: list[str],
                 right: list[str]) -> None:
        self.sides = [(PROBE, left_alias, left), (VERSIONED, right_alias, right)]
        self.probe, self.versioned = left, right

    def position(self, column: exp.Column) -> str:
        """``flink_l<i>`` or ``flink_r<j>`` for a column of either side."""
        qualifier, name = column.table.lower(), column.name.lower()
        for prefix, alias, names in self.sides:
            if qualifier and qualifier != alias.lower():
                continue
            index = next((i for i, n in enumerate(names) if n.lower() == name), None)
            if index is not None:
                return f"{prefix}{index}"
        raise FlinkSqlError(f"Column '{column.sql()}' not found in any table")

    def rewrite(self, node: exp.Expr) -> exp.Expr:
        """``node`` with each column of either side as the view's."""
        if isinstance(node, exp.Column):
            return exp.column(self.position(node))
        for column in list(node.find_all(exp.Column)):
            column.replace(exp.column(self.position(column)))
        return node

    def expand(self, item: exp.Expr) -> list[exp.Expr]:
        """A select item, ``*`` and ``alias.*`` expanded to the sides' columns by name."""
        star = item if isinstance(item, exp.Star) else item.this \
            if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) else None
        if star is None:
            return [item]
        qualifier = item.table.lower() if isinstance(item, exp.Column) else ""
        items = []
        for prefix, alias, names in self.sides:
            if not qualifier or qualifier == alias.lower():
                items += [exp.alias_(exp.column(f"{prefix}{i}"), n, quoted=True)
                          for i, n in enumerate(names)]
        return items

    def read_from(self, select: exp.Select, view: str) -> None:
        """``select`` (the join's) made to read the join's rows from ``view``: its join gone,
        its columns the view's; a column selected keeps its name, stars become the sides'
        columns."""
        select.set("joins", None)
        select.set("from_", exp.From(this=exp.to_table(view)))
        select.set("expressions", [exp.alias_(e, e.name, quoted=True)
                                   if isinstance(e, exp.Column) and not e.is_star else e
                                   for item in select.expressions for e in self.expand(item)])
        for column in list(select.find_all(exp.Column)):
            if column.find_ancestor(exp.Select) is select and not column.is_star \
                    and not column.name.startswith((PROBE, VERSIONED)):
                column.replace(self.rewrite(column))


def _side_frame(session: Any, join: TemporalJoin, schemas: dict[str, CatalogTable],
                streaming: bool, names: JoinNames, versioned: bool) -> Any:
    """One input of the join: its keys (``flink_k<i>``), its time, its side and its columns."""
    if versioned:
        source: exp.Expr = exp.alias_(exp.to_table(join.versioned.name),
                                            join.versioned_alias, table=True)
        keys = [v for _, v in join.keys]
        time = exp.column(join.versioned.watermark.rowtime,  # type: ignore[union-attr]
                          join.versioned_alias)
        columns, prefix = names.versioned, VERSIONED
    else:
        source = join.probe.copy()
        keys = [p for p, _ in join.keys]
        time = join.time
        columns, prefix = names.probe, PROBE
    alias = join.versioned_alias if versioned else join.probe_alias
    items = ([exp.alias_(k.copy(), f"flink_k{i}") for i, k in enumerate(keys)]
             + [exp.alias_(exp.cast(time.copy(), "TIMESTAMP"), _TIME),
                exp.alias_(exp.Literal.number(int(versioned)), _SIDE)]
             + [exp.alias_(exp.column(n, alias, quoted=True), f"{prefix}{i}")
                for i, n in enumerate(columns)])
    return session.sql(to_spark_sql(exp.select(*items).from_(source), schemas,
                                    streaming=streaming))


def _batch_join(probe: Any, versioned: Any, join: TemporalJoin, n_probe: int,
                n_versioned: int) -> Any:
    """The as-of join of two bounded inputs: each probe row with its key's latest version not
    after its time."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = [f"flink_k{i}" for i in range(len(join.keys))]
    probe = probe.withColumn("flink_pid", F.monotonically_increasing_id())
    versions = versioned.select(*[F.col(k).alias(f"v_{k}") for k in keys],
                                F.col(_TIME).alias("flink_vtime"),
                                *[f"{VERSIONED}{j}" for j in range(n_versioned)])
    condition = [probe[k] == versions[f"v_{k}"] for k in keys] \
        + [versions["flink_vtime"] <= probe[_TIME]]
    joined = probe.join(versions, condition, "left")
    latest = Window.partitionBy("flink_pid").orderBy(F.col("flink_vtime").desc_nulls_last())
    joined = joined.withColumn("flink_rn", F.row_number().over(latest)).where("flink_rn = 1")
    if not join.outer:
        joined = joined.where(F.col("flink_vtime").isNotNull())
    return joined.select(*[f"{PROBE}{i}" for i in range(n_probe)],
                         *[f"{VERSIONED}{j}" for j in range(n_versioned)])


def _keyed_join(probe: Any, versioned: Any, join: TemporalJoin, n_probe: int,
                n_versioned: int) -> Any:
    """The join of two unbounded inputs, on Spark's keyed runtime (event-time timers)."""
    from pyspark.sql.types import StructType

    from ..streaming import ROCKSDB_PROVIDER

    probe.sparkSession.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    both = probe.unionByName(versioned, allowMissingColumns=True)
    keys = [f"flink_k{i}" for i in range(len(join.keys))]
    probe_columns = [f"{PROBE}{i}" for i in range(n_probe)]
    versioned_columns = [f"{VERSIONED}{j}" for j in range(n_versioned)]
    schema = StructType([both.schema[c] for c in probe_columns + versioned_columns])
    timestamps = [f.name for f in schema.fields if f.dataType.typeName().startswith("timestamp")]
    processor = temporal_join_processor(probe_columns, versioned_columns, join.outer, timestamps)
    return both.groupBy(*keys).transformWithStateInPandas(processor, schema, "Append", "EventTime")


def _with_residual(session: Any, view: str, residual: exp.Expr, outer: bool,
                   n_probe: int, n_versioned: int) -> str:
    """A view of ``view`` with the join's other conditions applied: an inner join keeps the
    rows that meet them, a LEFT JOIN pads the version of those that do not."""
    probe = [exp.column(f"{PROBE}{i}") for i in range(n_probe)]
    if outer:
        versioned = [exp.alias_(exp.Case(ifs=[exp.If(this=residual.copy(),
                                                     true=exp.column(f"{VERSIONED}{j}"))]),
                                f"{VERSIONED}{j}") for j in range(n_versioned)]
        tree = exp.select(*probe, *versioned).from_(view)
    else:
        tree = exp.select("*").from_(view).where(residual)
    name = f"{view}_on"
    session.sql(to_spark_sql(tree, {})).createOrReplaceTempView(name)
    return name


# -- the keyed processor (runs in Spark's Python workers) -------------------------------------


@dataclass(slots=True)
class JoinState:
    """A key's state: its probe rows not joined yet ``(time, sequence, values)``, its versions
    ``(time, values)`` in time order, and the event-time timer registered (None: none)."""

    pending: list[tuple[int, int, tuple[Any, ...]]]
    versions: list[tuple[int, tuple[Any, ...]]]
    timer: int | None = None
    sequence: int = 0

    def add(self, side: list[int], times: list[int], rows: list[tuple[Any, ...]],
            probe_width: int) -> None:
        """A micro-batch's rows of the key, each side's columns taken from its part."""
        for s, t, row in zip(side, times, rows):
            if s == 0:
                self.pending.append((t, self.sequence, row[:probe_width]))
                self.sequence += 1
            else:  # a version at an existing time replaces it
                values = row[probe_width:]
                at = bisect.bisect_left(self.versions, t, key=lambda v: v[0])
                if at < len(self.versions) and self.versions[at][0] == t:
                    self.versions[at] = (t, values)
                else:
                    self.versions.insert(at, (t, values))

    def join(self, watermark: int, outer: bool, versioned_width: int) -> list[tuple[Any, ...]]:
        """The probe rows the watermark has passed, each with its version (in time order); the
        versions no later probe row can need dropped."""
        ready = sorted((p for p in self.pending if p[0] <= watermark), key=lambda p: p[:2])
        self.pending = [p for p in self.pending if p[0] > watermark]
        times = [t for t, _ in self.versions]
        out = []
        for t, _, values in ready:
            at = bisect.bisect_right(times, t) - 1
            if at >= 0:
                out.append(values + self.versions[at][1])
            elif outer:
                out.append(values + (None,) * versioned_width)
        valid = bisect.bisect_right(times, watermark) - 1
        if valid > 0:
            del self.versions[:valid]
        return out


def temporal_join_processor(probe: list[str], versioned: list[str], outer: bool,
                            timestamps: list[str]) -> Any:
    """The StatefulProcessor of ``transformWithStateInPandas`` running the temporal join per
    key (made here, so that this module imports without pyspark's SQL extras)."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from ..streaming import move_timer

    columns = probe + versioned

    class TemporalJoinProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.state = handle.getValueState("join", "s binary")

        def handleInputRows(self, key: Any, rows: Iterator[Any],  # noqa: N802
                            timerValues: Any) -> Iterator[Any]:  # noqa: N803
            state = self._load()
            for frame in rows:
                times = (frame[_TIME].astype("int64") // 1_000_000).tolist()
                values = list(frame[columns].itertuples(index=False, name=None))
                state.add(frame[_SIDE].tolist(), times, values, len(probe))
            yield from self._emit(state, timerValues.getCurrentWatermarkInMs())

        def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa: N802, N803
                               expiredTimerInfo: Any) -> Iterator[Any]:  # noqa: N803
            state = self._load()
            state.timer = None  # Spark deleted the timer that fired
            yield from self._emit(state, timerValues.getCurrentWatermarkInMs())

        def _load(self) -> JoinState:
            stored = self.state.get()  # one round trip to Spark's state server
            return pickle.loads(stored[0]) if stored is not None else JoinState([], [])

        def _emit(self, state: JoinState, watermark: int) -> Iterator[Any]:
            out = state.join(watermark, outer, len(versioned))
            state.timer = move_timer(self.handle, state.timer,
                                     min((p[0] for p in state.pending), default=None))
            self.state.update((pickle.dumps(state),))
            if out:
                frame = pd.DataFrame(out, columns=columns)
                for name in timestamps:
                    frame[name] = pd.to_datetime(frame[name])
                yield frame

        def close(self) -> None:
            pass

    return TemporalJoinProcessor()
