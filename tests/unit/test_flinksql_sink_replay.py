"""A STREAMING INSERT's ``filesystem`` sink across a micro-batch Spark runs again (a JobManager
lost after the batch wrote its files, before Spark's ``commits/<id>``): the files are committed
with Spark's commit only, the replayed batch's replace the first attempt's, and every row is in
the table once. A real Structured Streaming query on the unit tests' local Spark; the crash is
the batch's commit entry deleted before the query runs again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_flinksql_changelog_formats import MicroBatchInsert, committed_lines

from sessioncluster.spark.filesink import QueryManifests
from sessioncluster.spark.flinksql.connectors import StagedBatch, staged_sink
from sessioncluster.spark.flinksql.microbatch import write_batch
from sessioncluster.spark.flinksql.model import CatalogTable, Column

#: per case: the sink's format and columns, the query over ``src(w, x)`` and its output mode
CASES = {
    "append": ("csv", [("w", "STRING"), ("x", "INT")], "SELECT w, x FROM src", "append"),
    "updating": ("canal-json", [("w", "STRING"), ("n", "BIGINT")],
                 "SELECT w, SUM(x) AS n FROM src GROUP BY w", "update"),
}


def _run(spark: Any, query: str, src: Path, checkpoint: Path, sink: QueryManifests,
         insert: MicroBatchInsert, commit: bool) -> None:
    """One run of the query over the files there are (``availableNow``), its batches written
    by ``write_batch``; Spark's commits then, as the job's watch does, unless not ``commit``."""
    spark.readStream.schema("w STRING, x INT").csv(str(src)).createOrReplaceTempView("src")
    sink.recover()  # at the start of every run, as StreamingSqlJob.start_queries
    state = checkpoint / "changelog"
    (spark.sql(query).writeStream.outputMode(insert.output_mode)
     .foreachBatch(lambda df, batch_id: write_batch(insert, df, batch_id, state, None,
                                                    StagedBatch(sink.manifests, batch_id)))
     .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
     .start().awaitTermination(120))
    if commit:
        sink.commit()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_replayed_micro_batch_writes_its_rows_once(local_spark: Any, tmp_path: Path,
                                                     case: str) -> None:
    fmt, columns, query, mode = CASES[case]
    table = CatalogTable("s", [Column(n, t) for n, t in columns],
                         {"connector": "filesystem", "path": str(tmp_path / "out"), "format": fmt})
    insert = MicroBatchInsert(table, mode)
    src, checkpoint, out = tmp_path / "src", tmp_path / "ckpt", tmp_path / "out"
    src.mkdir()
    sink = staged_sink(table, checkpoint)
    (src / "a.csv").write_text("a,1\nb,2\n")
    _run(local_spark, query, src, checkpoint, sink, insert, True)
    first = committed_lines(out)
    (src / "b.csv").write_text("a,3\n")
    _run(local_spark, query, src, checkpoint, sink, insert, False)
    assert committed_lines(out) == first, "a batch's files are visible before Spark committed it"
    for entry in ("1", ".1.crc"):  # lost before Spark's commit: batch 1 runs again
        (checkpoint / "commits" / entry).unlink()
    _run(local_spark, query, src, checkpoint, sink, insert, True)
    lines = committed_lines(out)
    if case == "append":
        assert sorted(lines) == ["a,1", "a,3", "b,2"]
    else:  # Flink's canal-json changelog of the two batches, each record once
        assert sorted(lines[:2]) == sorted(['{"data":[{"w":"a","n":1}],"type":"INSERT"}',
                                            '{"data":[{"w":"b","n":2}],"type":"INSERT"}'])
        assert lines[2:] == ['{"data":[{"w":"a","n":1}],"type":"DELETE"}',
                             '{"data":[{"w":"a","n":4}],"type":"INSERT"}']
    assert not [p for p in out.rglob(".*") if p.is_file()], "a pending file was left behind"
