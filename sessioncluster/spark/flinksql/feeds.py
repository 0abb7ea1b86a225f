"""A query that feeds another through files: Structured Streaming runs no stateful operator
after an aggregation in ``update`` mode, so an updating query whose changelog a stateful
operation reads (a DataStream after ``to_changelog_stream``, a join) is a query of its own. Each
of its micro-batches' changes is one Parquet file in its ``outbox``, which the reading query
reads as a file stream (:meth:`OutboxFeed.reader`) and deletes once its batch is committed.

A feed's directory (``<checkpoint dir>/<key>``) is its Spark checkpoint, its changelog state
and its outbox: a savepoint holds it (``jobmanager/savepoint.py``). A micro-batch run again after
a failure writes its file once: the file is there, or its reader has read it (Spark's file
source remembers the paths it read, and reads a path once).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any


class OutboxFeed:
    """The feeding query: ``frame`` in ``output_mode``, each micro-batch's changes
    (:meth:`changes_table`, which subclasses give) written as one Parquet file into
    ``records_dir``."""

    #: the subdirectory of the records files (a savepoint's ``Feed``)
    outbox = "records"

    def __init__(self, key: str, frame: Any, output_mode: str, directory: Path) -> None:
        self.key, self.frame, self.output_mode = key, frame, output_mode
        self.directory = directory
        self.records_dir = directory / self.outbox
        self.state_dir = directory / "changelog"
        self.records_dir.mkdir(parents=True, exist_ok=True)

    def start(self, trigger_ms: int, name: str) -> Any:
        """The feeding query, started on its checkpoint."""
        self.records_dir.mkdir(parents=True, exist_ok=True)  # a restored feed may have none
        return (self.frame.writeStream.outputMode(self.output_mode).foreachBatch(self.write)
                .option("checkpointLocation", str(self.directory)).queryName(name)
                .trigger(processingTime=f"{trigger_ms} milliseconds").start())

    def reader(self, session: Any, schema: Any) -> Any:
        """The streaming DataFrame of the outbox's files, each deleted once the reading query
        has committed its batch (at its next batch): the outbox does not grow with age."""
        return (session.readStream.schema(schema).option("cleanSource", "delete")
                .parquet(str(self.records_dir)))

    def changes_table(self, df: Any, batch_id: int) -> Any:
        """The micro-batch's changes as an Arrow table; None when there are none."""
        raise NotImplementedError

    def write(self, df: Any, batch_id: int) -> None:
        """``foreachBatch``: the micro-batch's file, written aside, then renamed (Spark's file
        source sees it whole or not at all)."""
        import pyarrow.parquet as pq

        target = self.records_dir / f"batch-{batch_id:012d}.parquet"
        table = self.changes_table(df, batch_id)
        if table is None or target.exists():
            return
        staging = self.directory / f".{target.name}-{uuid.uuid4().hex[:8]}"
        pq.write_table(table, str(staging))
        os.replace(staging, target)
