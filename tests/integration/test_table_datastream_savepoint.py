"""A savepoint of a DataStream job whose source is an updating unbounded Table
(``to_changelog_stream`` of a GROUP BY over a monitored directory): the job is two Structured
Streaming queries (the Table's changelog feeder and the DataStream's query), and the savepoint
holds both. Stopped with a savepoint, given a file while no job runs, restored with
``execution.savepoint.path``: the counts go on from the saved state (``-U``/``+U`` of the saved
counts, no ``+I`` from zero), and the FileSink holds every change of Flink's changelog once."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

import sessioncluster
from sessioncluster.client.table_environment import StreamTableEnvironment
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Configuration, Types
from sessioncluster.pyflink.common.serialization import Encoder
from sessioncluster.pyflink.datastream.connectors.file_system import FileSink

from .test_streaming import drop
from .test_table_to_unbounded_datastream import (
    ROUNDS,
    committed_lines,
    environments,
    plain_changelog,
    wait_for,
)

pytestmark = pytest.mark.integration


def changelog_to_files(session: sessioncluster.Session, src: Path, out: Path,
                       savepoint: str | None = None) -> object:
    """``SELECT word, COUNT(*)`` as a changelog stream into a FileSink, started (restored from
    ``savepoint`` when given): its JobClient."""
    if savepoint is None:
        env, t_env = environments(session, src)
    else:  # the same program; its table is in the session's catalog already
        env = session.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.set_parallelism(2)
        env.configure(Configuration().set_string("execution.savepoint.path", savepoint))
        t_env = StreamTableEnvironment.create(env)
    table = t_env.sql_query(f"SELECT word, COUNT(*) AS c FROM words_{src.parent.name} "
                            "GROUP BY word")
    (t_env.to_changelog_stream(table)
     .map(lambda r: f"{r.get_row_kind()},{r.word},{r.c}", output_type=Types.STRING())
     .sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).build()))
    return env.execute_async("changelog to files")


def lines_of(changes: list[list[tuple[str, str, int]]]) -> list[str]:
    return sorted(f"{kind},{word},{c}" for round_ in changes for kind, word, c in round_)


def test_stop_with_savepoint_then_restore_continues_the_changelog(session, tmp_path: Path
                                                                  ) -> None:
    src, out, savepoints = tmp_path / "in", tmp_path / "out", tmp_path / "savepoints"
    src.mkdir()
    changelog = plain_changelog(ROUNDS)
    job = changelog_to_files(session, src, out)
    try:
        drop(src, "part-0.csv", ROUNDS[0])
        wait_for(lambda: sorted(committed_lines(out)) == lines_of(changelog[:1]),
                 lambda: (job.get_job_status(), sorted(committed_lines(out))))
        location = job.stop_with_savepoint(False, str(savepoints)).result(timeout=120)
    finally:
        if job.get_job_status() is JobStatus.RUNNING:
            job.cancel()
    assert job.wait(60).status is JobStatus.FINISHED
    manifest = json.loads(Path(location, "_metadata.json").read_text())
    assert list(manifest["feeds"]) and all(Path(location, "feeds", k).is_dir()
                                          for k in manifest["feeds"])

    drop(src, "part-1.csv", ROUNDS[1])  # arrives while no job runs
    restored = changelog_to_files(session, src, out, savepoint=location)
    try:
        # round 1 updates the saved counts (-U/+U of to and be, +I of not); nothing of round 0
        # comes again
        wait_for(lambda: sorted(committed_lines(out)) == lines_of(changelog[:2]),
                 lambda: (restored.get_job_status(), restored.details().error_text,
                          sorted(committed_lines(out))))
        drop(src, "part-2.csv", ROUNDS[2])
        wait_for(lambda: sorted(committed_lines(out)) == lines_of(changelog),
                 lambda: (restored.get_job_status(), restored.details().error_text,
                          sorted(committed_lines(out))))
        assert restored.details().streaming["restored"].external_path == location
    finally:
        restored.cancel()
    assert restored.wait(60).status is JobStatus.CANCELED
    # the final counts (each word's last +I/+U), as plain Python counts the words of every round
    counted: dict[str, int] = {}
    for line in committed_lines(out):
        kind, word, c = line.split(",")
        if kind in ("+I", "+U"):
            counted[word] = max(counted.get(word, 0), int(c))
    assert counted == collections.Counter(line.split(",")[0] for lines in ROUNDS for line in lines)
