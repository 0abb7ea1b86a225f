"""A STREAMING job's watermark control: Flink's watermarks where Spark's own do not follow.

The watermarks of ``spark/streaming.py``'s control records (one directory per watermark
vertex): Flink's final watermark when the input ends (the end-of-input record), and idleness
(an input that put out nothing for its idle timeout is brought up to the others, so that Spark's
minimum over a query's watermarks does not wait for it)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from ..graph.jobgraph import JobGraph
from ..spark.sources import write_control
from ..spark.streaming import END_OF_INPUT_MS, MAX_TS, StreamQuery, controlled_watermarks
from .checkpointstats import watermark_ms

log = logging.getLogger("sessioncluster.streaming")

#: how long the batch that runs with a socket job's final watermark is waited for (s)
FINAL_WATERMARK_SECONDS = 60.0
#: how often the queries' progress is looked at while waiting for it (s)
POLL_SECONDS = 0.25


class WatermarkControl:
    """The control records of one job's watermarks."""

    def __init__(self, job_id: str, graph: JobGraph, control_dir: Path) -> None:
        self.job_id = job_id
        #: the watermarks fed by control records: their delay and idle timeout, by vertex
        self.controlled = controlled_watermarks(graph)
        self.control_dir = control_dir
        #: per idle-capable watermark: (its records out, since when (monotonic), the watermark it
        #: was last brought up to)
        self._idle: dict[str, tuple[int, float, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.controlled)

    def write_final(self) -> None:
        """Flink's final watermark: the end-of-input record into every controlled watermark
        (once per run)."""
        if not (self.control_dir / next(iter(self.controlled)) / "end.parquet").exists():
            for vid in self.controlled:
                write_control(self.control_dir / vid, END_OF_INPUT_MS, "end")

    def final_while_running(self, queries: dict[str, Any], stream_queries: list[StreamQuery],
                            stop: threading.Event) -> None:
        """The final watermark of a job whose sockets have ended: its queries keep running (a
        socket source started again would connect again), read the end-of-input record, and
        run the batch that fires the event-time timers and windows it passes."""
        if not self.controlled:
            return
        self.write_final()
        log.info("streaming job %s: sockets closed, final watermark", self.job_id)
        final = END_OF_INPUT_MS - max(delay for delay, _ in self.controlled.values())
        waiting = {q.key for q in stream_queries if q.event_time}
        deadline = time.monotonic() + FINAL_WATERMARK_SECONDS
        for query in queries.values():
            query.processAllAvailable()  # the batch that reads the record and moves the watermark
        while waiting and time.monotonic() < deadline and not stop.is_set():
            for key in list(waiting):
                query = queries[key]
                # the batch after it runs with the final watermark (and reports it)
                marks = [(p.get("eventTime") or {}).get("watermark") for p in query.recentProgress]
                if not query.isActive or any(m and watermark_ms(m) >= final for m in marks):
                    waiting.discard(key)
            time.sleep(POLL_SECONDS)

    def bring_up_idle(self, counter: Any) -> None:
        """Flink's idleness on Spark: a watermark whose vertex has put out nothing for its idle
        timeout is brought up to the latest of the others (from their largest output
        timestamps); Flink leaves an idle input out of the minimum, and takes the largest once
        all are idle."""
        try:
            counts = dict(counter.value) if counter is not None else {}
        except RuntimeError:  # Spark's scheduler thread was merging a task's counts: next round
            return
        now = time.monotonic()
        marks = {vid: counts[(vid, -1, MAX_TS)] - delay
                 for vid, (delay, _) in self.controlled.items() if (vid, -1, MAX_TS) in counts}
        for vid, (delay, idleness) in self.controlled.items():
            if idleness is None or vid not in marks:
                continue  # a watermark with no record yet does not hold Spark's back
            out = records_out(counts, vid)
            seen, since, raised = self._idle.get(vid, (-1, now, marks[vid]))
            if out != seen:
                self._idle[vid] = (out, now, max(raised, marks[vid]))
                continue
            target = max((m for v, m in marks.items() if v != vid), default=None)
            if now - since < idleness / 1000 or target is None or target <= max(raised, marks[vid]):
                continue
            write_control(self.control_dir / vid, target + delay, f"idle-{target}")
            self._idle[vid] = (out, since, target)
            log.info("streaming job %s: watermark of %s idle, brought up to %d", self.job_id,
                     vid[:8], target)


def records_out(counts: dict[Any, int], vertex_id: str) -> int:
    """A vertex's records out over all its subtasks, from ``RecordCounts``."""
    return sum(n for (v, _, d), n in counts.items() if v == vertex_id and d == "out")
