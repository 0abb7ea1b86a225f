"""STREAMING mode on the shared session: Structured Streaming queries with keyed state in the
state store, files dropped into a directory in rounds, the collect iterator, FileSink, checkpoints,
and stop-with-savepoint then restore (counts continue, nothing read twice)."""

from __future__ import annotations

import collections
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster import cli
from sessioncluster.client.restclient import RestClient
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Configuration, Duration, Types, WatermarkStrategy
from sessioncluster.pyflink.common.watermark_strategy import TimestampAssigner
from sessioncluster.pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from sessioncluster.pyflink.datastream.functions import AggregateFunction
from sessioncluster.pyflink.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    StreamFormat,
)
from sessioncluster.pyflink.common.serialization import Encoder

pytestmark = pytest.mark.integration

#: generous: the first micro-batch of a stateful query loads RocksDB and the state store
RESULT_TIMEOUT = 180.0


def streaming_env(session: sessioncluster.Session) -> StreamExecutionEnvironment:
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    env.enable_checkpointing(300)
    return env


def word_counts(env: StreamExecutionEnvironment, directory: Path) -> Any:
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
              .monitor_continuously(Duration.of_millis(200)).build())
    return (env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
            .flat_map(lambda line: line.split(), output_type=Types.STRING())
            .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
            .key_by(lambda t: t[0], key_type=Types.STRING())
            .sum(1).uid("word-counts"))


def read_until(results: Iterator[Any], latest: dict[str, int], expected: dict[str, int]) -> None:
    """Read (word, count) updates until the latest count of every word is the expected one."""
    deadline = time.monotonic() + RESULT_TIMEOUT
    while latest != expected:
        assert time.monotonic() < deadline, f"still {latest}, expected {expected}"
        word, count = next(results)
        latest[word] = count


ROUNDS = [["to be or not to be", "that is the question"],
          ["to sleep perchance to dream"],
          ["be be be", "question everything"]]


def drop(directory: Path, name: str, lines: list[str]) -> None:
    """A file appears whole (written aside, then renamed), as a file source needs."""
    tmp = directory.parent / f".{name}"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(directory / name)


def python_counts(rounds: list[list[str]]) -> dict[str, int]:
    return dict(collections.Counter(w for lines in rounds for line in lines for w in line.split()))


class Seconds(TimestampAssigner):
    """The event time of a line ``"<seconds>,<word>"``."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value.split(",")[0]) * 1000


def test_keyed_count_over_files_dropped_in_rounds(session: sessioncluster.Session, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """(a) the running keyed count equals plain Python's after each round of new files."""
    src = tmp_path / "in"
    src.mkdir()
    env = streaming_env(session)
    drop(src, "round-0.txt", ROUNDS[0])
    results = word_counts(env, src).execute_and_collect("streaming word count")
    latest: dict[str, int] = {}
    try:
        read_until(results, latest, python_counts(ROUNDS[:1]))
        client = results.client
        assert client.get_job_status() is JobStatus.RUNNING
        # a BATCH job runs beside the streaming one on the same session
        batch = session.get_execution_environment()
        assert sorted(batch.from_collection([3, 1, 2]).map(lambda x: x * 2)
                      .execute_and_collect("batch beside a stream")) == [2, 4, 6]
        for i, lines in enumerate(ROUNDS[1:], 1):
            drop(src, f"round-{i}.txt", lines)
            read_until(results, latest, python_counts(ROUNDS[:i + 1]))
        details = client.details()
        assert details.streaming is not None
        assert details.streaming["counts"]["completed"] >= 1
        assert {v.state.value for v in details.vertices} == {"RUNNING"}
        source = details.vertices[0]
        assert source.records_out >= sum(len(line.split()) for r in ROUNDS for line in r)
        assert {j.job_id: j.status for j in session.jobs()}[client.job_id] is JobStatus.RUNNING
        # Flink's REST API and CLI job commands
        job = RestClient.of(session).get(f"/jobs/{client.job_id}")
        assert (job["job-type"], job["isStoppable"], job["plan"]["type"]) == ("STREAMING", True,
                                                                             "STREAMING")
        assert cli.main(["list-jobs", session.info.name, "--running"]) == 0
        assert f"{client.job_id}  RUNNING" in capsys.readouterr().out
        assert cli.main(["savepoint", session.info.name, client.job_id, str(tmp_path / "sp")]) == 0
        location = capsys.readouterr().out.split("Path: ")[1].strip()
        assert Path(location, "_metadata.json").exists() and Path(location).parent == tmp_path / "sp"
        assert cli.main(["cancel", session.info.name, client.job_id]) == 0
        assert client.wait(60).status is JobStatus.CANCELED
        assert cli.main(["cancel", session.info.name, client.job_id]) == 1
        assert "is already CANCELED" in capsys.readouterr().err
    finally:
        results.close()
    assert results.client.wait(60).status is JobStatus.CANCELED


def test_stop_with_savepoint_then_restore_continues_the_counts(session: sessioncluster.Session,
                                                                 tmp_path: Path) -> None:
    """(b) stop with a savepoint, drop more files, restore: totals continue, no record lost or
    counted twice; the FileSink has every update exactly once."""
    src, out, savepoints = tmp_path / "in", tmp_path / "out", tmp_path / "savepoints"
    src.mkdir()
    drop(src, "round-0.txt", ROUNDS[0])
    env = streaming_env(session)
    counts = word_counts(env, src)
    counts.sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
                   .with_output_file_config(OutputFileConfig.builder().build()).build())
    client = env.execute_async("counts to files")
    expected_lines = sum(len(line.split()) for line in ROUNDS[0])
    deadline = time.monotonic() + RESULT_TIMEOUT
    while len(_lines(out)) < expected_lines:
        assert time.monotonic() < deadline and client.get_job_status() is JobStatus.RUNNING, \
            (client.get_job_status(), client.details().error_text)
        time.sleep(0.2)
    location = client.stop_with_savepoint(False, str(savepoints)).result()
    assert client.wait(60).status is JobStatus.FINISHED
    assert Path(location, "_metadata.json").exists() and Path(location).parent == savepoints

    drop(src, "round-1.txt", ROUNDS[1])  # arrives while no job runs
    env2 = streaming_env(session)
    env2.configure(Configuration().set_string("execution.savepoint.path", location))
    results = word_counts(env2, src).execute_and_collect("restored counts")
    latest: dict[str, int] = {}
    try:
        # only words of the new file come out, with totals that include round 0
        expected = {w: c for w, c in python_counts(ROUNDS[:2]).items()
                    if w in set(" ".join(ROUNDS[1]).split())}
        read_until(results, latest, expected)
        assert results.client.details().streaming["restored"].external_path == location
    finally:
        results.close()
    lines = _lines(out)
    assert len(lines) == expected_lines  # each update of round 0 once, no duplicate batch
    assert collections.Counter(word_count_of(line)[0] for line in lines) == python_counts(ROUNDS[:1])


def word_count_of(line: str) -> tuple[str, int]:
    """A FileSink's line of a declared ``TUPLE([STRING, INT])``: Java's text ``(word,count)``
    (/work/briefs/data/javaprint2/probe_filesink.out)."""
    word, count = line[1:-1].rsplit(",", 1)
    return word, int(count)


def _lines(directory: Path) -> list[str]:
    if not directory.exists():
        return []
    # committed part files, in their buckets (the default: an hour's directory)
    return [line for p in sorted(directory.rglob("part-*")) for line in p.read_text().splitlines()]


def test_savepoint_errors_are_clear(session: sessioncluster.Session, tmp_path: Path) -> None:
    env = streaming_env(session)
    env.configure(Configuration().set_string("execution.savepoint.path", str(tmp_path / "nope")))
    src = tmp_path / "in"
    src.mkdir()
    counts = word_counts(env, src)
    with pytest.raises(sessioncluster.JobExecutionException, match="does not exist"):
        list(counts.execute_and_collect("bad restore"))
    # a checkpoint directory that cannot be written (here: below a file; root may write anywhere)
    env = streaming_env(session)
    (tmp_path / "a-file").write_text("")
    env.get_checkpoint_config().set_checkpoint_storage_dir(str(tmp_path / "a-file" / "checkpoints"))
    with pytest.raises(sessioncluster.JobExecutionException, match="is not writable"):
        list(word_counts(env, src).execute_and_collect("unwritable checkpoints"))
    batch = session.get_execution_environment()
    client = batch.from_collection([1, 2]).map(lambda x: x).execute_and_collect_async("batch")
    future = client.trigger_savepoint(str(tmp_path / "sp"))
    with pytest.raises(Exception, match="BATCH job"):
        future.result()


def test_event_time_windows_fire_when_the_watermark_passes(session: sessioncluster.Session,
                                                            tmp_path: Path) -> None:
    """(d) tumbling event-time windows of 10 s with 2 s of out-of-orderness: a window fires once
    the watermark (largest timestamp - 2 s) passes its end; a record behind the watermark for
    its window goes to the late side output."""
    from sessioncluster.pyflink.datastream import OutputTag
    from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows
    from sessioncluster.pyflink.common import Time

    src = tmp_path / "in"
    src.mkdir()
    env = streaming_env(session)
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
                .with_timestamp_assigner(Seconds()))
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    late = OutputTag("late", Types.STRING())
    windows = (env.from_source(source, strategy, "events")
               .map(lambda line: (line.split(",")[1], 1))
               .key_by(lambda t: t[0])
               .window(TumblingEventTimeWindows.of(Time.seconds(10)))
               .side_output_late_data(late)
               .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("windows"))
    results = windows.execute_and_collect("event-time windows")
    try:
        drop(src, "1.txt", ["1,x", "3,x", "2,y", "9,x"])
        drop(src, "2.txt", ["13,x"])       # watermark 11 s: [0, 10) fires
        got = []
        deadline = time.monotonic() + RESULT_TIMEOUT
        while len(got) < 2:
            assert time.monotonic() < deadline
            got.append(next(results))
        assert sorted(got) == [("x", 3), ("y", 1)]
        drop(src, "3.txt", ["4,y", "15,y", "25,z"])   # 4,y is late; watermark 23 s: [10, 20) fires
        while len(got) < 4:
            assert time.monotonic() < deadline
            got.append(next(results))
        assert sorted(got[2:]) == [("x", 1), ("y", 1)]
    finally:
        results.close()


def test_a_bounded_jobs_windows_and_timers_fire_in_the_micro_batch_of_its_input(
        session: sessioncluster.Session) -> None:
    """A bounded input in STREAMING: Flink's final watermark fires every window and event-time
    timer after the last record. Its records all come in one micro-batch, which fires them
    too: the job runs that one micro-batch, and its watermark is the final one."""
    from sessioncluster.pyflink.common import Time
    from sessioncluster.pyflink.datastream.functions import KeyedProcessFunction
    from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows

    class LastSeen(KeyedProcessFunction):  # each record, then a timer 60 s after it
        def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 60_000)
            yield value

        def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
            yield ctx.get_current_key(), timestamp

    events = [f"{t},{k}" for t, k in [(1, "x"), (3, "x"), (2, "y"), (9, "x"), (13, "x"),
                                      (15, "y"), (25, "z"), (4, "y")]]
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
                .with_timestamp_assigner(Seconds()))
    results = (env.from_collection(events).assign_timestamps_and_watermarks(strategy)
               .map(lambda line: (line.split(",")[1], 1))
               .key_by(lambda t: t[0])
               .window(TumblingEventTimeWindows.of(Time.seconds(10)))
               .reduce(lambda a, b: (a[0], a[1] + b[1]))
               .key_by(lambda t: t[0])
               .process(LastSeen())
               .execute_and_collect("bounded windows and timers"))
    got = sorted(results, key=repr)
    windows: collections.Counter[tuple[str, int]] = collections.Counter(
        (e.split(",")[1], int(e.split(",")[0]) // 10) for e in events)
    # each window's result (stamped with its last millisecond), and the timer it set
    assert got == sorted([(k, n) for (k, _), n in windows.items()]
                         + [(k, (w * 10 + 10) * 1000 - 1 + 60_000) for k, w in windows],
                         key=repr)
    client = results.client
    assert client.wait(60).status is JobStatus.FINISHED
    details = client.details()
    assert details.streaming is not None
    assert details.streaming["counts"]["completed"] == 1  # the micro-batch of the input
    assert details.streaming["watermark"] == 2**63 - 1


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_bounded_stream_with_its_watermark_chained_to_its_sink_keeps_every_record(
        session: sessioncluster.Session, mode: str) -> None:
    """A watermark strategy chained to the sink (no keyed operator behind it), on a bounded
    input: every record arrives, with its timestamp. (The control record that ends a bounded
    job's watermark once had the sink rows' output index, and the filter that drops it dropped
    them all.)"""
    from sessioncluster.client.table_environment import StreamTableEnvironment

    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode[mode])
    lines = [f"{t},{w}" for t, w in [(1, "x"), (4, "y"), (9, "x"), (12, "z")]]
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
                .with_timestamp_assigner(Seconds()))
    timed = env.from_collection(lines).assign_timestamps_and_watermarks(strategy)
    assert sorted(timed.map(str.upper).execute_and_collect(f"timed {mode}")) == sorted(
        line.upper() for line in lines)
    t_env = StreamTableEnvironment.create(env)
    from sessioncluster.pyflink.table import Schema
    table = t_env.from_data_stream(timed, Schema.new_builder().column_by_metadata(
        "rowtime", "TIMESTAMP_LTZ(3)").watermark("rowtime", "SOURCE_WATERMARK()").build())
    rows = table.execute().collect()
    assert sorted((r[0], r[1].timestamp()) for r in rows) == sorted(
        (line, float(line.split(",")[0])) for line in lines)


def test_an_idle_input_does_not_hold_back_the_watermark(session: sessioncluster.Session,
                                                         tmp_path: Path) -> None:
    """``with_idleness``: two inputs, each with its watermark, unioned into event-time windows.
    Spark takes the smaller watermark of the two; once input B has been quiet for its idle
    timeout, the windows fire by input A's watermark alone, as in Flink."""
    from sessioncluster.pyflink.common import Time
    from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows

    env = streaming_env(session)
    streams = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(0))
                    .with_timestamp_assigner(Seconds()).with_idleness(Duration.of_seconds(1)))
        source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                      str(tmp_path / name))
                  .monitor_continuously(Duration.of_millis(200)).build())
        streams.append(env.from_source(source, strategy, name))
    windows = (streams[0].union(streams[1])
               .map(lambda line: (line.split(",")[1], 1))
               .key_by(lambda t: t[0])
               .window(TumblingEventTimeWindows.of(Time.seconds(10)))
               .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("windows"))
    results = windows.execute_and_collect("idle input")
    try:
        drop(tmp_path / "a", "1.txt", ["1,x", "5,x"])
        drop(tmp_path / "b", "1.txt", ["2,y"])
        time.sleep(2)  # both inputs have a watermark (5 s and 2 s) before A moves on
        drop(tmp_path / "a", "2.txt", ["15,x", "25,x"])  # A: 25 s; B quiet, at 2 s
        got = []
        deadline = time.monotonic() + RESULT_TIMEOUT
        while len(got) < 3:
            assert time.monotonic() < deadline, f"only {got}"
            got.append(next(results))
        assert sorted(got) == [("x", 1), ("x", 2), ("y", 1)]
    finally:
        results.close()


def failing_word(word: str) -> str:
    if word == "boom":
        raise ValueError(f"cannot count {word!r}")
    return word


def test_a_user_error_restarts_by_the_strategy_then_fails_with_the_users_traceback(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    from sessioncluster.pyflink.common.restart_strategy import RestartStrategies

    src = tmp_path / "in"
    src.mkdir()
    env = streaming_env(session)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1, 100))
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    results = (env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
               .map(failing_word).execute_and_collect("fails"))
    drop(src, "1.txt", ["ok", "boom"])
    with pytest.raises(sessioncluster.JobExecutionException) as err:
        list(results)
    assert "cannot count 'boom'" in str(err.value) and "failing_word" in str(err.value)
    details = results.client.details()
    assert details.summary.status is JobStatus.FAILED and details.streaming["restarts"] == 1
    assert "RESTARTING" in details.status_times
    # the subtask that raised FAILED with the user's traceback (issue 24: STREAMING subtasks are
    # real); the restart (and any retry of Spark's) is a new attempt
    failed = [ex for ex in details.executions if ex.state is ExecutionState.FAILED
              and ex.error is not None]
    assert failed, [(ex.subtask, ex.attempt, ex.state) for ex in details.executions]
    error = failed[-1].error
    assert error.exc_type == "ValueError" and details.error == error
    assert any(name == "failing_word" for _, _, name, _ in error.frames)
    assert "cannot count 'boom'" in error.format()
    assert max(ex.attempt for ex in details.executions) >= 1


def test_a_source_directory_that_disappears_fails_the_job_clearly(session: sessioncluster.Session,
                                                                  tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "in"
    src.mkdir()
    drop(src, "1.txt", ["a b"])
    results = word_counts(streaming_env(session), src).execute_and_collect("vanishing source")
    latest: dict[str, int] = {}
    read_until(results, latest, {"a": 1, "b": 1})
    shutil.rmtree(src)
    with pytest.raises(sessioncluster.JobExecutionException, match="disappeared while the job ran"):
        list(results)


def test_a_bounded_number_sequence_with_side_outputs_and_union_finishes(
        session: sessioncluster.Session) -> None:
    """Bounded sources in STREAMING mode: the job FINISHES once they are read. A process
    function's side output and its main output, each transformed, then unioned."""
    from sessioncluster.pyflink.datastream import OutputTag, ProcessFunction
    from sessioncluster.pyflink.datastream.connectors.number_seq import NumberSequenceSource

    odd = OutputTag("odd", Types.LONG())

    class Split(ProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            if value % 2:
                ctx.output(odd, value)
            else:
                yield value

    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    numbers = env.from_source(NumberSequenceSource(1, 100), WatermarkStrategy.no_watermarks(), "numbers")
    split = numbers.process(Split())
    evens = split.map(lambda x: ("even", x))
    odds = split.get_side_output(odd).map(lambda x: ("odd", x))
    results = evens.union(odds).execute_and_collect("sides and union")
    got = sorted(results)  # ends: the job FINISHES when the sequence is consumed
    assert got == sorted([("even", x) for x in range(2, 101, 2)] + [("odd", x) for x in range(1, 100, 2)])
    assert results.client.wait(60).status is JobStatus.FINISHED


def test_connect_keyed_and_not_keyed(session: sessioncluster.Session) -> None:
    """Two inputs in STREAMING mode: ``connect`` with a CoMapFunction, and keyed connected
    streams whose KeyedCoProcessFunction shares one keyed state between both inputs."""
    from sessioncluster.pyflink.datastream import CoMapFunction, KeyedCoProcessFunction
    from sessioncluster.pyflink.datastream.connectors.number_seq import NumberSequenceSource
    from sessioncluster.pyflink.datastream.state import ValueStateDescriptor

    class Tag(CoMapFunction):
        def map1(self, value: Any) -> Any:
            return f"n{value}"

        def map2(self, value: Any) -> Any:
            return f"w{value}"

    class CountBoth(KeyedCoProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element1(self, value: Any, ctx: Any) -> Any:
            self.count.update((self.count.value() or 0) + 1)
            yield ctx.get_current_key(), self.count.value()

        def process_element2(self, value: Any, ctx: Any) -> Any:
            self.count.update((self.count.value() or 0) + 10)
            yield ctx.get_current_key(), self.count.value()

    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    numbers = env.from_source(NumberSequenceSource(1, 30), WatermarkStrategy.no_watermarks(), "numbers")
    words = env.from_collection(["a", "bb", "ccc", "dd"], type_info=Types.STRING())
    tagged = numbers.connect(words).map(Tag(), output_type=Types.STRING())
    counts = (numbers.connect(words)
              .key_by(lambda n: n % 3, lambda w: len(w) % 3, key_type=Types.INT())
              .process(CountBoth()).uid("count-both"))
    results = tagged.union(counts.map(lambda kv: f"k{kv[0]}={kv[1]}")).execute_and_collect("connect")
    got = list(results)
    assert results.client.wait(60).status is JobStatus.FINISHED
    assert sorted(g for g in got if g[0] in "nw") == sorted(
        [f"n{i}" for i in range(1, 31)] + ["wa", "wbb", "wccc", "wdd"])
    finals: dict[str, int] = {}
    for g in got:
        if g.startswith("k"):
            key, count = g[1:].split("=")
            finals[key] = max(finals.get(key, 0), int(count))
    # 10 numbers per residue; words by length % 3: 1 -> a; 2 -> bb, dd; 0 -> ccc
    assert finals == {"0": 10 + 10, "1": 10 + 10, "2": 10 + 20}


def test_a_socket_source_ends_when_its_peer_closes(session: sessioncluster.Session) -> None:
    """``socket_text_stream``: lines sent, then the peer closes; as Flink's socket source, the
    source ends and the job FINISHES with every line read."""
    peer = OneConnectionPeer(session, ["to be or", "not to be"])
    try:
        env = session.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.set_parallelism(1)
        results = (env.socket_text_stream("127.0.0.1", peer.port)
                   .flat_map(lambda line: line.split(), output_type=Types.STRING())
                   .execute_and_collect("socket words"))
        assert sorted(results) == sorted("to be or not to be".split())
        assert results.client.wait(60).status is JobStatus.FINISHED
    finally:
        peer.close()


class OneConnectionPeer:
    """A peer for ``socket_text_stream`` that, like ``nc -l``, serves one connection: the first
    one from the session's Spark driver gets ``lines``, then is closed. It counts the driver's
    connections; a connection from any other process (a stray one to a port it once had) is
    closed unanswered."""

    def __init__(self, session: sessioncluster.Session, lines: list[str]) -> None:
        import socket
        import threading

        self.session = session
        self.payload = "".join(f"{line}\n" for line in lines).encode()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.driver_connections = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _from_driver(self, peer: tuple[str, int]) -> bool:
        import psutil

        jobmanager = psutil.Process(self.session.info.jobmanager_pid)
        pids = {jobmanager.pid} | {c.pid for c in jobmanager.children(recursive=True)}
        return any(c.pid in pids and c.laddr and c.laddr.port == peer[1]
                   for c in psutil.net_connections(kind="tcp"))

    def _serve(self) -> None:
        while not self._done.is_set():
            try:
                conn, peer = self.server.accept()
            except OSError:  # the timeout: look at _done again
                continue
            with conn:
                if self._from_driver(peer):
                    self.driver_connections += 1
                    if self.driver_connections == 1:
                        conn.sendall(self.payload)

    def close(self) -> None:
        self._done.set()
        self._thread.join()
        self.server.close()


def test_a_stream_fanned_out_to_two_sinks_reads_its_source_once(session: sessioncluster.Session,
                                                                   tmp_path: Path) -> None:
    """One socket stream, two sinks: the sinks share one query, so the job opens one
    connection (the peer here, as ``nc -l``, serves only one) and each sink gets every line.
    The two branches run in one region after the source's stage, so the source's chain (with a
    map that notes each call in a file) runs once per record, and its records out are counted
    once per record (as Flink counts a collect), not once per edge."""
    calls = tmp_path / "calls"

    def tap(line: str) -> str:
        with open(calls, "a") as f:
            f.write("x\n")
        return line

    lines = [f"line {i}" for i in range(20)]
    peer = OneConnectionPeer(session, lines)
    try:
        env = session.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.set_parallelism(1)
        text = env.socket_text_stream("127.0.0.1", peer.port).map(tap).name("tap")
        for name, fn in (("upper", str.upper), ("lengths", len)):
            text.map(fn).sink_to(FileSink.for_row_format(str(tmp_path / name),
                                                         Encoder.simple_string_encoder()).build())
        client = env.execute_async("fan-out")
        assert client.wait(120).status is JobStatus.FINISHED, client.details().error_text
    finally:
        peer.close()
    assert peer.driver_connections == 1

    def written(name: str) -> list[str]:
        return sorted(x for p in (tmp_path / name).rglob("part-*") for x in p.read_text().splitlines())

    assert written("upper") == sorted(line.upper() for line in lines)
    assert written("lengths") == sorted(str(len(line)) for line in lines)
    assert len(calls.read_text().splitlines()) == len(lines)  # computed once, not once per sink
    source = next(v for v in client.details().vertices if "tap" in v.name)
    assert source.records_out == len(lines), source


def test_a_socket_source_that_ends_fires_its_last_windows(session: sessioncluster.Session) -> None:
    """Event-time windows over a socket: when the peer closes, the source ends and, as in Flink,
    the final watermark fires every window still open before the job FINISHES."""
    from sessioncluster.pyflink.common import Time
    from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows

    events = ["1,x", "3,x", "2,y", "9,x", "13,x", "15,y", "25,z", "27,z"]
    peer = OneConnectionPeer(session, events)
    try:
        env = session.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.set_parallelism(1)
        strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
                    .with_timestamp_assigner(Seconds()))
        results = (env.socket_text_stream("127.0.0.1", peer.port)
                   .assign_timestamps_and_watermarks(strategy)
                   .map(lambda line: (line.split(",")[1], 1))
                   .key_by(lambda t: t[0])
                   .window(TumblingEventTimeWindows.of(Time.seconds(10)))
                   .reduce(lambda a, b: (a[0], a[1] + b[1]))
                   .execute_and_collect("socket windows"))
        # the watermark reached 25 s before the end: [20, 30) fires only by the final watermark
        assert sorted(results) == [("x", 1), ("x", 3), ("y", 1), ("y", 1), ("z", 2)]
        assert results.client.wait(60).status is JobStatus.FINISHED
    finally:
        peer.close()


def _wait_source_records(client: Any, n: int) -> None:
    """Until the source has read ``n`` records (its file's micro-batch ran; its records out may
    be fewer: a window's partials)."""
    deadline = time.monotonic() + RESULT_TIMEOUT
    while client.details().vertices[0].records_in < n:
        assert time.monotonic() < deadline, f"the source has not read {n} records"
        time.sleep(0.2)


def test_window_all_over_several_micro_batches_fires_once(session: sessioncluster.Session,
                                                          tmp_path: Path) -> None:
    """window_all is a keyed window over one constant key: 100 records of [0, 10 s) in 4 files
    (4 micro-batches) give one window [0, 10 s) with all of them, once the watermark passes
    its end (issue 24: it fired per micro-batch, with 25, 25, 50)."""
    from sessioncluster.pyflink.common import Time
    from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows

    class Millis(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value)

    src = tmp_path / "in"
    src.mkdir()
    env = streaming_env(session)
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
                .with_timestamp_assigner(Millis()))
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    stamps = [i * 97 for i in range(100)]  # all in [0, 10 s)
    results = (env.from_source(source, strategy, "events")
               .map(lambda line: int(line))
               .window_all(TumblingEventTimeWindows.of(Time.seconds(10)))
               .aggregate(CountSum()).uid("window-all")
               .execute_and_collect("window_all over micro-batches"))
    try:
        for i in range(4):
            drop(src, f"{i}.txt", [str(t) for t in stamps[i * 25:(i + 1) * 25]])
            _wait_source_records(results.client, (i + 1) * 25)
        drop(src, "4.txt", ["12000"])  # watermark 11 s: [0, 10 s) fires, [10 s, 20 s) does not
        assert next(results) == (100, sum(stamps))
        drop(src, "5.txt", ["25000"])  # watermark 24 s: [10 s, 20 s) fires with its one record
        assert next(results) == (1, 12000)
    finally:
        results.close()


def test_count_window_all_over_several_micro_batches(session: sessioncluster.Session,
                                                     tmp_path: Path) -> None:
    """count_window_all(30) over files of 25 records (one micro-batch each): windows of exactly
    30 records, across micro-batches, in arrival order."""
    src = tmp_path / "in"
    src.mkdir()
    env = streaming_env(session)
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    results = (env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
               .map(lambda line: int(line))
               .count_window_all(30)
               .aggregate(CountSum()).uid("count-window-all")
               .execute_and_collect("count_window_all over micro-batches"))
    try:
        for i in range(4):
            drop(src, f"{i}.txt", [str(i * 25 + j) for j in range(25)])
            _wait_source_records(results.client, (i + 1) * 25)
        got = [next(results) for _ in range(3)]  # 100 records: 3 full windows, 10 left over
        assert [n for n, _ in got] == [30, 30, 30]
        # the first window is the first file and 5 records of the second; the three of them, the
        # first three files and 15 records of the fourth
        assert sum(range(30)) <= got[0][1] <= sum(range(25)) + sum(range(45, 50))
        assert sum(range(90)) <= sum(s for _, s in got) <= sum(range(75)) + sum(range(85, 100))
    finally:
        results.close()


class CountSum(AggregateFunction):
    """(number of records, their sum)."""

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + 1, acc[1] + value)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


# -- real STREAMING subtasks and accumulators (issue 24: subtasks reported per micro-batch) --------

from sessioncluster.api.accumulators import IntCounter  # noqa: E402
from sessioncluster.graph.lifecycle import ExecutionState  # noqa: E402
from sessioncluster.pyflink.datastream.functions import MapFunction, RuntimeContext  # noqa: E402


class CountingMap(MapFunction):
    """Counts its records into the accumulator ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = IntCounter()
        runtime_context.add_accumulator(self.name, self.seen)

    def map(self, value: Any) -> Any:
        self.seen.add(1)
        return value


def _taskmanager_ids(session: sessioncluster.Session) -> set[str]:
    return {tm["id"] for tm in RestClient.of(session).get("/taskmanagers")["taskmanagers"]}


def test_a_bounded_streaming_job_has_subtasks_on_taskmanagers_and_exact_accumulators(
        session: sessioncluster.Session) -> None:
    env = streaming_env(session)
    stream = env.from_collection(list(range(300)))
    (stream.map(CountingMap("before")).key_by(lambda x: x % 5).reduce(lambda a, b: a + b)
     .map(CountingMap("after")).print())
    result = env.execute("subtasks and accumulators")
    assert result.get_accumulator_result("before") == 300
    assert result.get_accumulator_result("after") == 300
    details = session.job(result.job_id).details()
    tms = _taskmanager_ids(session)
    ran = [ex for ex in details.executions if ex.tm_id is not None]
    assert {ex.state for ex in details.executions} == {ExecutionState.FINISHED}
    # every subtask of the keyed vertex got keys: it ran on a TaskManager, in a slot
    keyed = next(v for v in details.vertices if v.name.startswith("Keyed Reduce"))
    keyed_runs = [ex for ex in ran if ex.vertex_id == keyed.vertex_id]
    assert sorted(ex.subtask for ex in keyed_runs) == [0, 1]
    assert all(ex.tm_id in tms and ex.slot is not None for ex in ran)
    assert all({"DEPLOYING", "INITIALIZING", "RUNNING"} <= set(ex.state_times) for ex in ran)
    assert keyed.records_in == 300 and keyed.records_out == 300
    assert sum(ex.accumulators["numRecordsIn"][1] for ex in keyed_runs) == 300


def test_live_accumulators_and_running_subtasks_of_an_unbounded_job(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env = streaming_env(session)
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    client = (env.from_source(source, WatermarkStrategy.no_watermarks(), "lines")
              .map(CountingMap("lines")).key_by(lambda line: line).map(CountingMap("keyed"))
              .execute_and_collect_async("live accumulators"))
    rest = RestClient.of(session)
    try:
        for i in range(3):
            drop(src, f"{i}.txt", [f"line {i} {j}" for j in range(10)])
        deadline = time.monotonic() + RESULT_TIMEOUT
        while True:
            accs = client.details().accumulators
            if accs.get("lines") == 30 and accs.get("keyed") == 30:
                break
            assert time.monotonic() < deadline, f"accumulators {accs}"
            time.sleep(0.5)
        body = rest.get(f"/jobs/{client.job_id}/accumulators")
        assert {"name": "lines", "type": "int", "value": "30"} in body["user-task-accumulators"]
        assert client.get_accumulators().result()["keyed"] == 30  # PyFlink's future of them
        details = client.details()
        assert details.summary.status is JobStatus.RUNNING
        running = [ex for ex in details.executions if ex.state is ExecutionState.RUNNING]
        assert running and all(ex.tm_id in _taskmanager_ids(session) for ex in running)
    finally:
        client.cancel()
        client.wait(RESULT_TIMEOUT)
    ended = client.details()
    assert ended.summary.status is JobStatus.CANCELED
    assert all(ex.state.is_terminal for ex in ended.executions)


@pytest.mark.parametrize("incremental", [None, "true"])
def test_state_commits_are_incremental_when_the_job_says_so(
        session: sessioncluster.Session, tmp_path: Path, incremental: str | None) -> None:
    """Keyed state commits write RocksDB snapshots by default, changelogs (Spark's changelog
    checkpointing, Flink's incremental checkpoints) with ``execution.checkpointing.incremental``
    true; the counts are plain Python's either way."""
    src, checkpoints = tmp_path / "in", tmp_path / "checkpoints"
    src.mkdir()
    env = streaming_env(session)
    config = Configuration().set_string("state.checkpoints.dir", str(checkpoints))
    if incremental is not None:
        config.set_string("execution.checkpointing.incremental", incremental)
    env.configure(config)
    results = word_counts(env, src).execute_and_collect(f"incremental {incremental}")
    latest: dict[str, int] = {}
    try:
        for i, lines in enumerate(ROUNDS[:2]):
            drop(src, f"round-{i}.txt", lines)
            read_until(results, latest, python_counts(ROUNDS[:i + 1]))
    finally:
        results.close()
    state = [p.suffix for p in checkpoints.rglob("state/*/*/*") if p.suffix in (".zip", ".changelog")]
    if incremental is None:
        assert ".zip" in state and ".changelog" not in state, state
    else:
        assert ".changelog" in state, state
