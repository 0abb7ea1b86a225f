"""``MATCH_RECOGNIZE`` over an unbounded stream, as Flink's ``StreamExecMatch`` (``CepOperator``
in event time) runs it: keyed by the PARTITION BY columns (without them, one key), each key's
rows are buffered until the watermark passes them, then fed to the matcher in rowtime order
(:func:`.matchrecognize.resume_matches`); each match is emitted (``+I``) when the row that
completes it is fed. A row at or before the watermark when it arrives is late and dropped.

It runs on Structured Streaming's ``transformWithStateInPandas`` in event-time mode: the table's
WATERMARK is Spark's ``withWatermark``, an event-time timer at the earliest buffered row's time
feeds the rows the watermark has passed. A key's state (one value, pickled, in RocksDB with the
query's checkpoint) is its buffered rows, the matcher's partial and held matches
(:class:`.patternmatch.MatchState`) and the fed rows they still hold.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Iterator

from .matchrecognize import MatchPlan, resume_matches
from .patternmatch import MatchState

#: the constant key of a MATCH_RECOGNIZE without PARTITION BY
_NO_KEY = "flink_match_key"


@dataclass(slots=True)
class KeyMatching:
    """A key's matching: rows not final yet ``(time ms, ORDER BY values, arrival, row)``, the
    matcher's state, the fed rows it still holds (by position), the event-time timer set."""

    pending: list[tuple[int, tuple[Any, ...], int, dict[str, Any]]] = field(default_factory=list)
    matcher: MatchState = field(default_factory=MatchState)
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    arrived: int = 0
    emitted: int = 0
    timer: int | None = None

    def add(self, plan: MatchPlan, times: list[int], rows: list[dict[str, Any]],
            watermark: int) -> None:
        """A micro-batch's rows of the key; those at or before the watermark are late (dropped,
        as Flink's)."""
        for t, row in zip(times, rows):
            if t > watermark:
                self.pending.append((t, tuple(row[c] for c in plan.order[1:]), self.arrived, row))
            self.arrived += 1

    def advance(self, plan: MatchPlan, watermark: int) -> list[tuple[Any, ...]]:
        """The rows the watermark has passed fed in order; the matches they complete, each the
        measures' atoms, the completing row's time, its arrival and the match's number."""
        final = sorted((p for p in self.pending if p[0] <= watermark), key=lambda p: p[:3])
        if not final:
            return []
        self.pending = [p for p in self.pending if p[0] > watermark]
        start = self.matcher.next_row
        arrival = {}
        for k, (_, _, seq, row) in enumerate(final):
            self.rows[start + k] = row
            arrival[start + k] = seq
        out = []
        for match, atoms in resume_matches(plan, self.matcher, self.rows, start + len(final)):
            last = match[-1][0]
            out.append((*atoms, self.rows[last][plan.order[0]], arrival[last], self.emitted))
            self.emitted += 1
        needed = self.matcher.first_needed()
        self.rows = {i: r for i, r in self.rows.items() if i >= needed}
        return out


def keyed_matches(frame: Any, plan: MatchPlan, schema: Any) -> Any:
    """The matches of the unbounded ``frame`` (its watermark set) as a stream of rows of
    ``schema``: the PARTITION BY columns, the measures' atoms, ``__at``, ``__seq``, ``__n``."""
    from pyspark.sql import functions as F

    from ..streaming import ROCKSDB_PROVIDER

    frame.sparkSession.conf.set("spark.sql.streaming.stateStore.providerClass",
                                ROCKSDB_PROVIDER)
    keys = plan.partition or [_NO_KEY]
    if not plan.partition:
        frame = frame.withColumn(_NO_KEY, F.lit(0))
    timestamps = [f.name for f in schema.fields if f.dataType.typeName().startswith("timestamp")]
    processor = match_processor(plan, [c for c in frame.columns if c != _NO_KEY],
                                [f.name for f in schema.fields], timestamps)
    return frame.groupBy(*[F.col(f"`{k}`") for k in keys]) \
        .transformWithStateInPandas(processor, schema, "Append", "EventTime")


def match_processor(plan: MatchPlan, columns: list[str], output: list[str],
                    timestamps: list[str]) -> Any:
    """The StatefulProcessor of ``transformWithStateInPandas`` matching each key's rows as the
    watermark passes them (:class:`KeyMatching`); its output columns ``output``, those in
    ``timestamps`` of a timestamp type."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from ..streaming import move_timer

    rowtime = plan.order[0]

    class MatchProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.state = handle.getValueState("matching", "s binary")

        def handleInputRows(self, key: Any, rows: Iterator[Any],  # noqa: N802
                            timerValues: Any) -> Iterator[Any]:  # noqa: N803
            state = self._load()
            watermark = timerValues.getCurrentWatermarkInMs()
            for frame in rows:
                values = frame[columns].astype(object).where(frame[columns].notna(), None)
                times = (frame[rowtime].astype("int64") // 1_000_000).tolist()
                records = [{c: (v.to_pydatetime() if isinstance(v, pd.Timestamp) else v)
                            for c, v in r.items()} for r in values.to_dict("records")]
                state.add(plan, times, records, watermark)
            yield from self._emit(key, state, watermark)

        def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa: N802, N803
                               expiredTimerInfo: Any) -> Iterator[Any]:  # noqa: N803
            state = self._load()
            state.timer = None  # Spark deleted the timer that fired
            yield from self._emit(key, state, timerValues.getCurrentWatermarkInMs())

        def _load(self) -> KeyMatching:
            stored = self.state.get()
            return pickle.loads(stored[0]) if stored is not None else KeyMatching()

        def _emit(self, key: Any, state: KeyMatching, watermark: int) -> Iterator[Any]:
            out = state.advance(plan, watermark)
            state.timer = move_timer(self.handle, state.timer,
                                     min((p[0] for p in state.pending), default=None))
            self.state.update((pickle.dumps(state),))
            if out:
                prefix = tuple(key) if plan.partition else ()
                result = pd.DataFrame([prefix + row for row in out], columns=output)
                for name in timestamps:
                    result[name] = pd.to_datetime(result[name])
                yield result

        def close(self) -> None:
            pass

    return MatchProcessor()
