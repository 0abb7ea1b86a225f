"""A streaming statement's micro-batches on the JobManager (each query's ``foreachBatch``):
Flink's changelog of each (:func:`batch_changelog`: ``+I`` per row of an append-only query, an
updating query's changes against the rows it emitted before, kept per micro-batch id in a
:class:`ChangelogState`), written into the statement's sink (:func:`write_batch`) or kept for
its client (:func:`collected`)."""

from __future__ import annotations

import os
import pickle
from collections import Counter
from pathlib import Path
from typing import Any, Protocol

from ...api.table.changelog_mode import ROW_KIND_COLUMN as ROW_KIND
from ...common.types import pyflink_value
from . import connectors
from .connectors.printing import (
    PrintedLines,
    fixed,
    format_row,
    print_prefix,
    print_to_standard,
    value_fixers,
)
from .model import CatalogTable
from .updating import OuterQuery, changelog, result_changes
from .updatingsession import ChangeSessions, session_rows, session_step
from .updatingwindow import ChangeWindows, fold_windows, window_step


class InsertQuery(Protocol):
    """What this module reads of a streaming statement's INSERT (``streamingjob.StreamingInsert``)."""

    table: CatalogTable
    output_mode: str
    key_positions: list[int]
    row_kinds: bool
    outer: OuterQuery | None


# -- the changelog of an updating query ------------------------------------------------------------
class ChangelogState:
    """The last emitted row per key of one updating query, one snapshot per micro-batch id in
    ``directory`` (the two latest kept): a batch run again finds the snapshot of the batch
    before it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _snapshots(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(n.split(".")[0]) for n in os.listdir(self.directory)
                      if n.endswith(".state"))

    def done(self, batch_id: int) -> bool:
        """True when the batch's changelog was emitted already."""
        return batch_id in self._snapshots()

    def before(self, batch_id: int) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        """The rows emitted up to the batch before ``batch_id``."""
        earlier = [b for b in self._snapshots() if b < batch_id]
        if not earlier:
            return {}
        with open(self.directory / f"{earlier[-1]}.state", "rb") as f:
            return dict(pickle.load(f))

    def latest(self) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        """The rows emitted up to the latest micro-batch (a restored job's current result)."""
        snapshots = self._snapshots()
        return self.before(snapshots[-1] + 1) if snapshots else {}

    def save(self, batch_id: int, rows: dict[tuple[Any, ...], tuple[Any, ...]]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{batch_id}.state.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(rows, f)
        os.replace(tmp, self.directory / f"{batch_id}.state")
        for old in self._snapshots()[:-2]:
            (self.directory / f"{old}.state").unlink(missing_ok=True)


# -- the sinks, per micro-batch -------------------------------------------------------------------
def write_batch(insert: InsertQuery, df: Any, batch_id: int, state_dir: Path,
                printed: PrintedLines | None = None,
                staged: connectors.StagedBatch | None = None) -> int:
    """Write one micro-batch (``df``, a batch DataFrame) into the insert's sink; the rows
    written. An updating query's rows become Flink's changelog (``print``: its lines). A
    ``print`` sink's lines also go into ``printed``. A ``filesystem`` sink's files are left
    ``staged`` when given: a batch run again then writes its changelog again, in place of the
    first attempt's pending files."""
    if insert.output_mode != "update" and not insert.row_kinds:
        return connectors.write_table(df, insert.table, printed=printed, staged=staged)
    changes = batch_changelog(insert, df, batch_id, state_dir, again=staged is not None)
    if insert.table.connector == "print":
        prefix = print_prefix(insert.table.options.get("print-identifier", ""), 0, 1)
        fixers = value_fixers(df.schema)
        lines = [prefix + format_row(fixed(list(row), fixers), kind) for kind, row in changes]
        print_to_standard(insert.table, lines)
        if printed is not None:
            printed.add(insert.table, lines)
    elif connectors.is_changelog_table(insert.table):
        if changes:
            connectors.write_table(_changes_frame(insert, df, changes), insert.table,
                                   staged=staged)
    elif changes and connectors.sink_is_append_only(insert.table) and insert.outer is not None:
        # a legacy group window's rows over an updating query: insert-only
        connectors.write_table(insert.outer.frame(df.sparkSession, [r for _, r in changes]),
                               insert.table, staged=staged)
    return len(changes)


def _changes_frame(insert: InsertQuery, df: Any, changes: list[tuple[str, tuple[Any, ...]]]
                   ) -> Any:
    """The changes as a DataFrame of their rows' columns (``df``'s without its RowKind, or the
    outer query's), the kind last."""
    from pyspark.sql.types import StringType, StructField, StructType

    spark = df.sparkSession
    fields = [f for f in df.schema.fields if f.name != ROW_KIND] if insert.outer is None \
        else insert.outer.frame(spark, []).schema.fields
    return spark.createDataFrame(
        [(*row, kind) for kind, row in changes],
        StructType([*fields, StructField(ROW_KIND, StringType())]))


def batch_changelog(insert: InsertQuery, df: Any, batch_id: int, state_dir: Path,
                    again: bool = False) -> list[tuple[str, tuple[Any, ...]]]:
    """One micro-batch as Flink's changelog: ``+I`` per row of an append-only query; an
    updating one's from its :class:`ChangelogState`. A batch emitted before gives nothing,
    unless ``again`` (its sink replaces what the first attempt wrote): then the same changes,
    from the state of the batch before it."""
    if insert.output_mode != "update" and not insert.row_kinds:
        return [("+I", tuple(r)) for r in df.collect()]
    state = ChangelogState(state_dir)
    if state.done(batch_id) and not again:
        return []  # emitted before the failure that runs this batch again
    if insert.row_kinds:  # the changes are the rows (the state is in Spark's state store)
        changes = [(r[-1], tuple(r)[:-1]) for r in df.collect()]
        if insert.outer is None:
            state.save(batch_id, {})
            return changes
        # a query over the changes (a join's): their rows applied, row -> count
        rows = Counter(state.before(batch_id))
        for kind, row in changes:
            rows[row] += 1 if kind in ("+I", "+U") else -1
        current = dict(+rows)
        inner_rows = list(Counter(current).elements())
    else:
        current = state.before(batch_id)
        updated = [tuple(r) for r in df.collect()]
        windowed = insert.outer is not None and insert.outer.window_delay_ms is not None \
            and insert.outer.session is None  # a HOP's rows once per window
        changes = changelog(current, fold_windows(updated) if windowed else updated,
                            insert.key_positions)
        inner_rows = list(current.values())
    if insert.outer is not None and insert.outer.window_delay_ms is not None:
        changes = _window_changes(insert.outer, df.sparkSession, changes, batch_id,
                                  state_dir / "windows")
    elif insert.outer is not None:  # the changes of the query over the updating one
        outer = ChangelogState(state_dir / "outer")
        result = outer.before(batch_id)
        changes = result_changes(result, insert.outer.rows(df.sparkSession, inner_rows),
                                 insert.outer.key_positions) if changes else []
        outer.save(batch_id, result)
    state.save(batch_id, current)
    return changes


def _window_changes(outer: OuterQuery, session: Any, changes: list[tuple[str, tuple[Any, ...]]],
                    batch_id: int, state_dir: Path) -> list[tuple[str, tuple[Any, ...]]]:
    """A legacy group window over an updating query: the micro-batch's changes into the open
    windows (kept per batch id, as the changelog's rows), the outer query over the rows of
    the windows that fire; its rows ``+I``."""
    state, key = ChangelogState(state_dir), ("windows",)  # one entry: the open windows
    if outer.session is not None:  # a SESSION's: over its signed rows
        return _session_changes(outer, session, changes, batch_id, state)
    windows = state.before(batch_id).get(key, (ChangeWindows(),))[0]
    assert outer.window_delay_ms is not None
    fired = window_step(windows, changes, outer.window_delay_ms)
    state.save(batch_id, {key: (windows,)})
    if outer.window_column is not None:  # a HOP's: each window's rows on their own
        return [("+I", row) for window, rows in fired for row in outer.rows(session, rows,
                                                                            window[0])]
    rows = [row for _, window_rows in fired for row in window_rows]
    return [("+I", row) for row in outer.rows(session, rows)] if rows else []


def _session_changes(outer: OuterQuery, session: Any, changes: list[tuple[str, tuple[Any, ...]]],
                     batch_id: int, state: ChangelogState) -> list[tuple[str, tuple[Any, ...]]]:
    """A legacy ``GROUP BY SESSION`` over an updating query: the micro-batch's changes into
    the open sessions, the outer query over the signed rows of the sessions that fire."""
    assert outer.session is not None and outer.window_delay_ms is not None
    key = ("sessions",)
    sessions = state.before(batch_id).get(key, (ChangeSessions(outer.session.gap_ms),))[0]
    fired = session_step(sessions, changes, outer.session.key_positions, outer.window_delay_ms)
    state.save(batch_id, {key: (sessions,)})
    rows = session_rows(fired)
    return [("+I", row) for row in outer.rows(session, rows)] if rows else []


def collected(changes: list[tuple[str, tuple[Any, ...]]]) -> list[bytes]:
    """A micro-batch's changelog as the result buffer keeps it: one pickled
    ``(row kind, values)`` per row, the values as PyFlink gives them (no pyspark type in them,
    so that the client reads them without pyspark)."""
    return [pickle.dumps((kind, tuple(pyflink_value(v) for v in row))) for kind, row in changes]
