"""The FileSink on the shared session, as Flink's: buckets and part files in BATCH and STREAMING,
written on into an existing base path, exactly once across a task failure and across
stop-with-savepoint → restore into the same base path."""

from __future__ import annotations

import collections
import json
import re
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import sessioncluster
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Configuration, Duration, WatermarkStrategy
from sessioncluster.pyflink.common.restart_strategy import RestartStrategies
from sessioncluster.pyflink.common.serialization import BulkWriterFactory, Encoder
from sessioncluster.pyflink.datastream import StreamExecutionEnvironment
from sessioncluster.pyflink.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)

from .test_streaming import streaming_env

pytestmark = pytest.mark.integration

TIMEOUT = 180.0
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: Flink's default bucket: the hour, yyyy-MM-dd--HH
HOUR_BUCKET = re.compile(r"\d{4}-\d{2}-\d{2}--\d{2}")


def committed(base: Path) -> dict[Path, list[str]]:
    """The visible (committed) part files under ``base`` and their lines."""
    return {p.relative_to(base): p.read_text().splitlines() for p in sorted(base.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def hidden(base: Path) -> list[Path]:
    return [p for p in base.rglob(".*") if p.is_file()]


def all_lines(base: Path) -> list[str]:
    return [line for lines in committed(base).values() for line in lines]


def uids(base: Path, prefix: str = "part") -> set[str]:
    return {re.fullmatch(rf"{prefix}-({UUID})-\d+.*", p.name).group(1)  # type: ignore[union-attr]
            for p in committed(base)}


class JsonLines(BulkWriterFactory):
    """A bulk writer factory for the plumbing: a JSON line per element and a trailer line."""

    def create(self, stream: Any) -> Any:
        return _JsonLinesWriter(stream)


class _JsonLinesWriter:
    def __init__(self, stream: Any) -> None:
        self.stream, self.n = stream, 0

    def add_element(self, element: Any) -> None:
        self.stream.write((json.dumps(element) + "\n").encode())
        self.n += 1

    def flush(self) -> None:
        self.stream.flush()

    def finish(self) -> None:
        self.stream.write(f"#end {self.n}\n".encode())


def test_batch_buckets_part_files_and_a_second_job_into_the_same_path(
        env: StreamExecutionEnvironment, tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = (FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("wc")
                                     .with_part_suffix(".txt").build()).build())
    env.from_collection([(i, f"r{i}") for i in range(40)]).map(lambda t: t).sink_to(sink)
    env.execute("file sink, first job")
    files = committed(out)
    # Flink's layout: <hour bucket>/<prefix>-<uid>-<index><suffix>, one uid per subtask
    assert {p.parent.name for p in files} and all(HOUR_BUCKET.fullmatch(p.parent.name) for p in files)
    assert all(re.fullmatch(rf"wc-{UUID}-0\.txt", p.name) for p in files) and len(files) == 2
    assert sorted(all_lines(out)) == sorted(str((i, f"r{i}")) for i in range(40))
    assert hidden(out) == []
    first_uids = uids(out, "wc")

    env2 = env.session.get_execution_environment()
    env2.from_collection(list(range(10))).sink_to(sink)  # the base path exists: written on into
    env2.execute("file sink, second job")
    assert len(committed(out)) == 4 and first_uids < uids(out, "wc")
    assert collections.Counter(all_lines(out)) == collections.Counter(
        [str((i, f"r{i}")) for i in range(40)] + [str(i) for i in range(10)])

    # sink_to_text: lines right under the path, added to what it holds
    text = tmp_path / "text"
    text.mkdir()
    (text / "existing.txt").write_text("kept\n")
    env2.from_collection(["a", "b"]).sink_to_text(str(text))
    env2.execute("sink_to_text")
    assert sorted(all_lines(text)) == ["a", "b", "kept"] and hidden(text) == []


def test_batch_bulk_format_and_base_path_bucket(env: StreamExecutionEnvironment, tmp_path: Path) -> None:
    out = tmp_path / "bulk"
    sink = (FileSink.for_bulk_format(str(out), JsonLines())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_output_file_config(OutputFileConfig("data", ".jsonl")).build())
    env.from_collection([{"n": i} for i in range(6)]).sink_to(sink)
    env.execute("bulk file sink")
    files = committed(out)
    assert len(files) == 2 and all(re.fullmatch(rf"data-{UUID}-0\.jsonl", str(p)) for p in files)
    for lines in files.values():  # finish() wrote the trailer, then the sink closed the stream
        assert lines[-1] == f"#end {len(lines) - 1}"
    assert sorted(json.loads(x)["n"] for lines in files.values() for x in lines[:-1]) == list(range(6))


def test_a_path_that_cannot_be_written_fails_at_submission(env: StreamExecutionEnvironment,
                                                           tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    jobs_before = len(env.session.jobs())
    with pytest.raises(NotADirectoryError, match="is a file, not a directory"):
        env.from_collection([1]).sink_to(
            FileSink.for_row_format(str(a_file), Encoder.simple_string_encoder()).build())
    with pytest.raises(NotADirectoryError, match="cannot create"):
        env.from_collection([1]).sink_to_text(str(a_file / "below"))
    assert len(env.session.jobs()) == jobs_before  # nothing reached the cluster


class FailsOn:
    """A map that raises the first ``times`` times it sees ``value`` (over all attempts and
    runs: marker files), else passes records through. Spark tries a task twice
    (``task_attempts``), so ``times=2`` fails the Spark job and the job restarts."""

    def __init__(self, marker: str, value: Any, times: int = 2) -> None:
        self.marker, self.value, self.times = marker, value, times

    def __call__(self, value: Any) -> Any:
        import os

        if value != self.value:
            return value
        for i in range(self.times):
            try:
                os.close(os.open(f"{self.marker}.{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
            raise RuntimeError(f"failing on {value!r}")
        return value


def test_batch_task_failure_and_restart_is_exactly_once(env: StreamExecutionEnvironment,
                                                        tmp_path: Path) -> None:
    """Subtask 0 fails on record 20 in both Spark attempts, after part files were written: the
    job restarts; the other subtask's files of the failed run are never committed."""
    out = tmp_path / "out"
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 100))
    env.from_collection(list(range(50))).map(FailsOn(str(tmp_path / "failed"), 20)).sink_to(
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=40)).build())
    result = env.execute("fails twice on 20")
    assert (tmp_path / "failed.1").exists() and result is not None
    assert sorted(all_lines(out), key=int) == [str(i) for i in range(50)]
    assert hidden(out) == []  # the failed run's in-progress files are gone
    assert max(int(p.name.rsplit("-", 1)[1]) for p in committed(out)) >= 1  # rolled by size


# -- STREAMING --------------------------------------------------------------------------------

def drop(directory: Path, name: str, lines: list[str]) -> None:
    tmp = directory.parent / f".{name}"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(directory / name)


def lines_of(round_: int) -> list[str]:
    return [f"round{round_}-line{i}" for i in range(12)]


def wait_for(what: str, done: Callable[[], bool], client: Any) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not done():
        status = client.get_job_status()
        assert time.monotonic() < deadline and not status.is_globally_terminal, \
            (what, status, client.details().error_text)
        time.sleep(0.2)


def upper_lines(env: StreamExecutionEnvironment, src: Path, out: Path, fn: Any = None) -> None:
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "lines")
    if fn is not None:
        ds = ds.map(fn)
    ds.map(str.upper).sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
                              .with_rolling_policy(RollingPolicy.default_rolling_policy()).build())


def test_streaming_stop_with_savepoint_then_restore_into_the_same_path(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    src, out, savepoints = tmp_path / "in", tmp_path / "out", tmp_path / "savepoints"
    src.mkdir()
    env = streaming_env(session)
    upper_lines(env, src, out)
    client = env.execute_async("lines to files")
    expected: list[str] = []
    for r in range(2):  # files dropped over time, each committed as its micro-batch completes
        drop(src, f"{r}.txt", lines_of(r))
        expected += [x.upper() for x in lines_of(r)]
        n = len(expected)
        wait_for(f"round {r}", lambda n=n: len(all_lines(out)) >= n, client)
    location = client.stop_with_savepoint(False, str(savepoints)).result()
    assert client.wait(60).status is JobStatus.FINISHED
    assert sorted(all_lines(out)) == sorted(expected) and hidden(out) == []
    first_uids = uids(out)
    assert all(HOUR_BUCKET.fullmatch(p.parent.name) for p in committed(out))

    drop(src, "2.txt", lines_of(2))  # arrives while no job runs
    env2 = streaming_env(session)
    env2.configure(Configuration().set_string("execution.savepoint.path", location))
    upper_lines(env2, src, out)
    client2 = env2.execute_async("lines to files, restored")
    expected += [x.upper() for x in lines_of(2)]
    wait_for("the restored job's lines", lambda: len(all_lines(out)) >= len(expected), client2)
    client2.stop_with_savepoint(False, str(savepoints)).result()
    assert client2.wait(60).status is JobStatus.FINISHED
    # every record exactly once across both runs' part files; the restored run's are its own
    assert collections.Counter(all_lines(out)) == collections.Counter(expected)
    assert first_uids < uids(out) and hidden(out) == []


def test_streaming_task_failure_restarts_exactly_once(session: sessioncluster.Session,
                                                      tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    env = streaming_env(session)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 100))
    upper_lines(env, src, out, FailsOn(str(tmp_path / "failed"), "round0-line5"))
    client = env.execute_async("fails once, to files")
    drop(src, "0.txt", lines_of(0))
    expected = [x.upper() for x in lines_of(0)]
    wait_for("round 0 after the restart", lambda: len(all_lines(out)) >= len(expected), client)
    drop(src, "1.txt", lines_of(1))
    expected += [x.upper() for x in lines_of(1)]
    wait_for("round 1", lambda: len(all_lines(out)) >= len(expected), client)
    assert (tmp_path / "failed.1").exists() and client.details().streaming["restarts"] >= 1
    client.cancel()
    assert client.wait(60).status is JobStatus.CANCELED
    assert collections.Counter(all_lines(out)) == collections.Counter(expected)
