"""A savepoint of a job with a feeding query (the changelog of an updating Table, written as
files its DataStream query reads as a file stream): the feed's directory goes into the
savepoint, and a restore moves it into the new job's checkpoint directory with the reader's
file-source log rewritten to the new place, so that the files read stay read and those not
read yet are read once. Spark's layout is written here as Spark writes it (``sources/0/<batch>``:
``v1`` then one JSON entry per file, a ``.crc`` beside it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessioncluster.common.checkpoints import rebase_file_source_reads
from sessioncluster.graph.jobgraph import JobGraph, JobVertex, OperatorSpec
from sessioncluster.graph.streamgraph import OperatorKind
from sessioncluster.jobmanager import savepoint
from sessioncluster.spark.streaming import StreamQuery

KEY = "table-0123"


@dataclass
class Feed:
    key: str = KEY
    outbox: str = "records"


def job_checkpoint(root: Path) -> Path:
    """A job's checkpoint directory: a feed that wrote batches 0-2, a reader that read 0-1."""
    records = root / KEY / "records"
    records.mkdir(parents=True)
    for batch in range(3):
        (records / f"batch-{batch}.parquet").write_bytes(b"PAR1 %d" % batch)
    (root / KEY / "commits").mkdir()
    (root / KEY / "commits" / "2").write_text("v1")
    (root / KEY / "changelog").mkdir()
    (root / KEY / "changelog" / "2.state").write_bytes(b"emitted")
    reader = root / "sink-0"
    (reader / "commits").mkdir(parents=True)
    (reader / "commits" / "1").write_text("v1")
    log = reader / "sources" / "0"
    log.mkdir(parents=True)
    for batch in range(2):
        entry = {"path": (records / f"batch-{batch}.parquet").as_uri(), "timestamp": 1,
                 "batchId": batch}
        (log / str(batch)).write_text("v1\n" + json.dumps(entry))
        (log / f".{batch}.crc").write_bytes(b"crc")
    return root


def read_paths(reader: Path) -> list[Path]:
    return sorted(Path(json.loads(line)["path"].removeprefix("file://"))
                  for log in sorted(reader.glob("sources/0/[0-9]*"))
                  for line in log.read_text().splitlines() if line.startswith("{"))


def sink() -> StreamQuery:
    v = JobVertex("s", "Sink", [OperatorSpec(0, OperatorKind.SINK_COLLECT, "Sink")], 1)
    return StreamQuery("sink-0", [v], None, [], [])


def test_a_savepoint_holds_the_feed_and_a_restore_moves_what_its_reader_read(tmp_path: Path
                                                                             ) -> None:
    old = job_checkpoint(tmp_path / "old")
    graph = JobGraph("job", [])
    location = savepoint.write(tmp_path / "sp", "a" * 32, graph, [sink()], old, 3, [Feed()])
    assert json.loads((location / "_metadata.json").read_text())["feeds"] == {KEY: {"batches": 2}}
    assert sorted(p.name for p in (location / "feeds" / KEY / "records").iterdir()) == \
        ["batch-0.parquet", "batch-1.parquet", "batch-2.parquet"]

    new = tmp_path / "new"
    savepoint.restore(location, [sink()], new, False, [Feed()])
    assert (new / KEY / "changelog" / "2.state").read_bytes() == b"emitted"
    # the reader read batches 0 and 1: at their new place now; batch 2 is there, not read yet
    assert read_paths(new / "sink-0") == [new / KEY / "records" / f"batch-{b}.parquet"
                                          for b in range(2)]
    assert all((new / KEY / "records" / f"batch-{b}.parquet").exists() for b in range(3))
    assert not list((new / "sink-0" / "sources" / "0").glob(".*.crc"))  # stale checksums gone
    assert read_paths(location / "queries" / "sink-0") == read_paths(old / "sink-0")  # untouched


def test_a_feed_no_table_source_takes_fails_the_restore_unless_ignored(tmp_path: Path) -> None:
    old = job_checkpoint(tmp_path / "old")
    location = savepoint.write(tmp_path / "sp", "a" * 32, JobGraph("job", []), [sink()], old, 3,
                               [Feed()])
    with pytest.raises(savepoint.SavepointError, match=f"Table's query \\({KEY}\\).*ignore"):
        savepoint.restore(location, [sink()], tmp_path / "new", False, [Feed("table-other")])
    savepoint.restore(location, [sink()], tmp_path / "new", True, [Feed("table-other")])
    assert not (tmp_path / "new" / KEY).exists()


def test_a_retained_checkpoint_restores_its_feed_too(tmp_path: Path) -> None:
    old = job_checkpoint(tmp_path / "old")
    new = tmp_path / "new"
    savepoint.restore(old, [sink()], new, False, [Feed()])
    assert read_paths(new / "sink-0") == [new / KEY / "records" / f"batch-{b}.parquet"
                                          for b in range(2)]
    assert read_paths(old / "sink-0")[0].parent == old / KEY / "records"


def test_rebase_keeps_the_entries_it_is_not_asked_to_move(tmp_path: Path) -> None:
    reader = job_checkpoint(tmp_path / "job") / "sink-0"
    before = (reader / "sources" / "0" / "0").read_text()
    assert rebase_file_source_reads(reader, lambda p: None) == 0
    assert (reader / "sources" / "0" / "0").read_text() == before
    assert (reader / "sources" / "0" / ".0.crc").exists()
