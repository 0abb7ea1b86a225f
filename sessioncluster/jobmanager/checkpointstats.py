"""A STREAMING job's checkpoint statistics, from its queries' progress reports: a checkpoint is
one committed micro-batch that read records or moved the watermark (Spark's offsets, commit log
and state-store version)."""

from __future__ import annotations

import time
from collections import deque
from datetime import datetime
from typing import Any

from ..api.functions import MAX_WATERMARK
from ..protocol.messages import CheckpointInfo

#: checkpoint statistics kept per job (Flink's web.checkpoints.history default is 10)
CHECKPOINT_HISTORY = 10


class CheckpointStatistics:
    """The latest checkpoints, their counts, the restored savepoint, the savepoints taken, and
    what the progress reports say of the job (records per second, watermark, source records)."""

    def __init__(self, history: int = CHECKPOINT_HISTORY) -> None:
        self.checkpoints: deque[CheckpointInfo] = deque(maxlen=history)
        self.counts = {"completed": 0, "failed": 0}
        self.restored: CheckpointInfo | None = None
        self.savepoints: list[str] = []
        self.records_per_second = 0.0
        self.watermark: int | None = None
        self.source_records = 0
        self._seen: set[tuple[str, int, Any]] = set()

    @property
    def completed(self) -> int:
        return self.counts["completed"]

    def collect(self, queries: dict[str, Any]) -> None:
        """Read the queries' progress reports not seen yet."""
        for key, query in list(queries.items()):
            try:
                progress = query.recentProgress
            except Exception:  # noqa: BLE001 - the query is gone: nothing more to read
                continue
            for p in progress:
                batch = (key, int(p["batchId"]), p.get("timestamp"))
                if batch in self._seen:
                    continue
                self._seen.add(batch)
                self.on_progress(key, p)

    def on_progress(self, key: str, p: dict[str, Any]) -> None:
        """One progress report of query ``key``: a checkpoint unless it read nothing and moved
        no watermark."""
        rows = int(p.get("numInputRows") or 0)
        watermark = (p.get("eventTime") or {}).get("watermark")
        if rows == 0 and (not watermark or watermark_ms(watermark) == self.watermark):
            return
        trigger = epoch_ms(p.get("timestamp"))
        stages = {name: int(ms) for name, ms in (p.get("durationMs") or {}).items()}
        duration = stages.get("triggerExecution", 0)
        state_size = sum(int(op.get("memoryUsedBytes") or 0) for op in p.get("stateOperators") or [])
        self.source_records += rows
        self.records_per_second = float(p.get("processedRowsPerSecond") or 0.0)
        if watermark:
            self.watermark = watermark_ms(watermark)
        self.counts["completed"] += 1
        self.checkpoints.append(CheckpointInfo(self.completed, "COMPLETED", trigger,
                                               trigger + duration, duration, state_size, rows,
                                               batch_id=int(p["batchId"]), query=key,
                                               stages=stages))

    def input_ended(self) -> None:
        """Flink's final watermark, for a bounded job whose last micro-batch fired every
        window and timer itself (Spark ran no batch after it to move the watermark)."""
        self.watermark = MAX_WATERMARK

    def restored_from(self, checkpoint_id: int, created_ms: int, state_size: int, path: str) -> None:
        """The job started from the savepoint at ``path``."""
        self.restored = CheckpointInfo(checkpoint_id, "COMPLETED", created_ms, created_ms, 0,
                                       state_size, 0, is_savepoint=True, external_path=path)

    def info(self) -> dict[str, Any]:
        """The statistics as the job's details carry them."""
        return {"checkpoints": list(self.checkpoints), "counts": dict(self.counts),
                "restored": self.restored, "savepoints": list(self.savepoints),
                "records_per_second": self.records_per_second, "watermark": self.watermark}


def epoch_ms(iso: str | None) -> int:
    """An ISO time of a progress report in ms since the epoch (now, without one)."""
    if not iso:
        return int(time.time() * 1000)
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def watermark_ms(iso: str) -> int:
    """A progress report's watermark in ms; the final watermark (end of input) is beyond the
    years Python reads, and is Flink's MAX watermark, Long.MAX_VALUE."""
    try:
        return epoch_ms(iso)
    except ValueError:
        return MAX_WATERMARK
