"""Real programs on the shared session, each checked against the same computation in plain
Python: word count over a text file, PageRank, average ratings, union with mixed parallelism,
accumulators (final, under a retried task, and live), and errors from bad input."""

from __future__ import annotations

import collections
import os
import random
import re
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pyspark
import pytest
import zmq

import sessioncluster
from sessioncluster import Histogram, IntCounter, MapFunction, RuntimeContext
from sessioncluster.graph.lifecycle import ExecutionState, JobStatus
from sessioncluster.graph.streamgraph import Partitioning
from sessioncluster.protocol.messages import AccumulatorsUpdated, JobStatusChanged
from sessioncluster.protocol.wire import MessageSigner

pytestmark = pytest.mark.integration

MLLIB_DATA = os.path.join(os.path.dirname(pyspark.__file__), "data", "mllib")
PAGERANK_DATA = os.path.join(MLLIB_DATA, "pagerank_data.txt")
MOVIELENS_DATA = os.path.join(MLLIB_DATA, "sample_movielens_data.txt")
#: a wedged job fails its test instead of hanging the run (not a performance bound)
JOB_TIMEOUT = 300.0

VOCABULARY = ("flink spark session cluster job vertex edge slot task manager stream batch key "
              "reduce map filter union sink source record window state shuffle partition "
              "chain operator accumulator heartbeat blob").split()


# -- helpers ---------------------------------------------------------------------------------

def write_text(path: Path, lines: int = 400, seed: int = 42) -> list[str]:
    """A deterministic text file of ``lines`` lines (some of them empty); returns the lines."""
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        n = 0 if i % 50 == 49 else rng.randint(1, 12)
        out.append(" ".join(rng.choice(VOCABULARY) for _ in range(n)))
    path.write_text("\n".join(out) + "\n")
    return out


def plain_word_count(lines: list[str]) -> dict[str, int]:
    return dict(collections.Counter(w for line in lines for w in line.split()))


def read_output(path: Path) -> list[str]:
    """The lines a text sink wrote: one file, or every visible part file under a directory."""
    if path.is_file():
        return path.read_text().splitlines()
    assert path.is_dir(), f"the text sink wrote nothing at {path}"
    lines: list[str] = []
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        if not any(part.startswith((".", "_")) for part in f.relative_to(path).parts):
            lines += f.read_text().splitlines()
    return lines


def plain_pagerank_step(links: dict[str, list[str]], ranks: dict[str, float]) -> dict[str, float]:
    contrib: dict[str, float] = collections.defaultdict(float)
    for src, dsts in links.items():
        for dst in dsts:
            contrib[dst] += ranks[src] / len(dsts)
    return {node: 0.15 + 0.85 * contrib.get(node, 0.0) for node in ranks}


def contributions(ranks: dict[str, float]) -> Callable[[tuple[str, list[str]]], Iterator[tuple[str, float]]]:
    """The flat_map of one PageRank iteration; ``ranks`` travels in its closure."""

    def contribute(link: tuple[str, list[str]]) -> Iterator[tuple[str, float]]:
        src, dsts = link
        for dst in dsts:
            yield dst, ranks[src] / len(dsts)

    return contribute


def add_pairs(a: tuple[int, tuple[float, int]], b: tuple[int, tuple[float, int]]) -> tuple[int, tuple[float, int]]:
    return a[0], (a[1][0] + b[1][0], a[1][1] + b[1][1])


def parse_rating(line: str) -> tuple[int, int, float]:
    """``user::movie::rating`` -> (movie, user, rating)."""
    user, movie, rating = line.split("::")
    return int(movie), int(user), float(rating)


def movielens_lines() -> list[str]:
    with open(MOVIELENS_DATA) as fh:
        return [line for line in fh.read().splitlines() if line.strip()]


def subscribe(session: sessioncluster.Session) -> zmq.Socket:
    """A SUB socket on the session's events, connected (a SUB misses what came before)."""
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(session.info.events)
    time.sleep(0.3)
    return sub


# -- programs --------------------------------------------------------------------------------

def test_read_text_file_gives_every_line_once(env, tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    lines = write_text(path)
    got = env.read_text_file(str(path)).execute_and_collect("read lines")
    assert sorted(got) == sorted(lines)  # without line ends, empty lines included


def test_word_count_over_a_text_file(env, tmp_path: Path) -> None:
    path = tmp_path / "words.txt"
    lines = write_text(path)
    result = (env.read_text_file(str(path)).flat_map(str.split).map(lambda w: (w, 1))
              .key_by(lambda t: t[0]).sum(1).execute_and_collect("word count"))
    assert len(result) == len({w for w, _ in result}), "more than one result for a key"
    assert dict(result) == plain_word_count(lines)


def test_word_count_written_with_sink_to_text(env, tmp_path: Path) -> None:
    lines = write_text(tmp_path / "words.txt", lines=200, seed=7)
    out = tmp_path / "counts"
    (env.from_collection(lines).flat_map(str.split).map(lambda w: (w, 1))
        .key_by(lambda t: t[0]).sum(1).map(lambda t: f"{t[0]}\t{t[1]}").sink_to_text(str(out)))
    env.execute("word count to text")
    expected = sorted(f"{w}\t{c}" for w, c in plain_word_count(lines).items())
    assert sorted(read_output(out)) == expected


def test_pagerank_five_iterations(env) -> None:
    links: dict[str, list[str]] = collections.defaultdict(list)
    with open(PAGERANK_DATA) as fh:
        for line in fh:
            if line.strip():
                src, dst = line.split()
                links[src].append(dst)
    nodes = sorted(set(links) | {d for dsts in links.values() for d in dsts})
    ranks = {n: 1.0 for n in nodes}
    expected = dict(ranks)
    for i in range(5):
        result = (env.from_collection(sorted(links.items())).flat_map(contributions(ranks))
                  .key_by(lambda t: t[0]).sum(1).execute_and_collect(f"pagerank {i}"))
        contrib = dict(result)
        assert len(contrib) == len(result), "more than one contribution sum for a node"
        ranks = {n: 0.15 + 0.85 * contrib.get(n, 0.0) for n in nodes}
        expected = plain_pagerank_step(links, expected)
    assert ranks.keys() == expected.keys()
    for node in nodes:
        assert ranks[node] == pytest.approx(expected[node], abs=1e-9, rel=0), node


def test_average_rating_per_movie(env) -> None:
    result = (env.read_text_file(MOVIELENS_DATA)
              .filter(lambda line: line.strip() != "")
              .map(parse_rating).map(lambda r: (r[0], (r[2], 1)))
              .key_by(lambda t: t[0]).reduce(add_pairs)
              .map(lambda t: (t[0], t[1][0] / t[1][1]))
              .execute_and_collect("average rating"))
    sums: dict[int, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for movie, _, rating in map(parse_rating, movielens_lines()):
        sums[movie][0] += rating
        sums[movie][1] += 1
    expected = {movie: total / n for movie, (total, n) in sums.items()}
    got = dict(result)
    assert len(got) == len(result)
    assert got.keys() == expected.keys()
    for movie, avg in expected.items():
        assert got[movie] == pytest.approx(avg, abs=1e-9, rel=0), movie


def test_min_and_max_rating_per_movie(env) -> None:
    ratings = [parse_rating(line) for line in movielens_lines()]
    lowest = env.from_collection(ratings).key_by(lambda r: r[0]).min(2).execute_and_collect("min")
    highest = env.from_collection(ratings).key_by(lambda r: r[0]).max(2).execute_and_collect("max")
    plain_min: dict[int, float] = {}
    plain_max: dict[int, float] = {}
    for movie, _, rating in ratings:
        plain_min[movie] = min(rating, plain_min.get(movie, rating))
        plain_max[movie] = max(rating, plain_max.get(movie, rating))
    assert len(lowest) == len(plain_min) and len(highest) == len(plain_max)
    assert {r[0]: r[2] for r in lowest} == plain_min
    assert {r[0]: r[2] for r in highest} == plain_max


def test_union_filter_key_by_with_mixed_parallelism(env) -> None:
    left, right = list(range(0, 50)), list(range(100, 190))
    a = env.from_collection(left).set_parallelism(1)
    b = env.from_collection(right).set_parallelism(3)
    client = (a.union(b).filter(lambda x: x % 3 != 0)
              .map(lambda x: (x % 5, x)).set_parallelism(2)
              .key_by(lambda t: t[0]).reduce(lambda p, q: (p[0], p[1] + q[1]))
              .execute_and_collect_async("union"))
    result = client.collect(timeout=JOB_TIMEOUT)
    expected: dict[int, int] = collections.defaultdict(int)
    for x in left + right:
        if x % 3 != 0:
            expected[x % 5] += x
    assert len(result) == len(expected)
    assert dict(result) == expected

    details = client.details()
    graph = details.job_graph
    # Flink's JobGraph: two sources, (filter -> map) with both sources as inputs, (reduce -> sink)
    assert len(graph.vertices) == 4, graph.explain()
    sources = [v for v in graph.vertices if v.is_source]
    assert sorted(v.parallelism for v in sources) == [1, 3], graph.explain()
    assert sorted(e.ship_strategy.value for e in graph.edges) == ["HASH", "REBALANCE", "REBALANCE"], \
        graph.explain()
    merged = [v for v in graph.vertices if len(v.inputs) == 2]
    assert len(merged) == 1, graph.explain()
    assert {graph.vertex(e.source).parallelism for e in merged[0].inputs} == {1, 3}
    assert all(e.ship_strategy is Partitioning.REBALANCE for e in merged[0].inputs)
    assert merged[0].parallelism == 2
    [keyed] = [e for e in graph.edges if e.ship_strategy is Partitioning.HASH]
    assert keyed.source == merged[0].vertex_id
    finished = [ex for ex in details.executions if ex.state is ExecutionState.FINISHED]
    assert len(finished) == sum(v.parallelism for v in graph.vertices) == 1 + 3 + 2 + 2


def test_key_by_after_an_exchange_of_equal_parallelism(env) -> None:
    """Two exchanges in a row (REBALANCE, then HASH) into operators of the same parallelism."""
    result = (env.from_collection(range(200)).rebalance().map(lambda x: (x % 5, x))
              .key_by(lambda t: t[0]).sum(1).execute_and_collect("two exchanges"))
    expected = {k: sum(x for x in range(200) if x % 5 == k) for k in range(5)}
    assert sorted(result) == sorted(expected.items())  # one result per key


# -- accumulators ----------------------------------------------------------------------------

class CountAndMeasure(MapFunction):
    """Counts records into "seen" and their lengths into the Histogram "len"."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = IntCounter()
        self.lengths = Histogram()
        runtime_context.add_accumulator("seen", self.seen)
        runtime_context.add_accumulator("len", self.lengths)

    def map(self, value: str) -> str:
        self.seen.add(1)
        self.lengths.add(len(value))
        return value


def test_accumulators_are_merged_over_subtasks(env) -> None:
    rng = random.Random(3)
    words = ["x" * rng.randint(0, 20) for _ in range(1000)]
    env.from_collection(words).map(CountAndMeasure()).filter(lambda _: False).print()
    result = env.execute("accumulators")
    assert result.get_accumulator_result("seen") == 1000
    assert result.get_accumulator_result("len") == dict(collections.Counter(len(w) for w in words))


class FailFifthRecordOnce(MapFunction):
    """Attempt #0 of subtask 0 raises on its 5th record, after counting it."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.counter = IntCounter()
        runtime_context.add_accumulator("processed", self.counter)
        self.fail = (runtime_context.get_attempt_number() == 0
                     and runtime_context.get_index_of_this_subtask() == 0)
        self.n = 0

    def map(self, value: int) -> int:
        self.n += 1
        self.counter.add(1)
        if self.fail and self.n == 5:
            raise RuntimeError("injected failure on the 5th record of attempt #0")
        return value


def test_retried_task_is_not_counted_twice(env) -> None:
    client = env.from_collection(range(100)).map(FailFifthRecordOnce()).execute_and_collect_async("retry")
    result = client.get_job_execution_result(timeout=JOB_TIMEOUT)
    assert client.get_job_status() is JobStatus.FINISHED
    assert sorted(client.collect(timeout=JOB_TIMEOUT)) == list(range(100))
    assert result.get_accumulator_result("processed") == 100
    details = client.details()
    attempts = sorted((ex.attempt, ex.state) for ex in details.executions if ex.subtask == 0)
    assert attempts == [(0, ExecutionState.FAILED), (1, ExecutionState.FINISHED)], details.executions
    [failed] = [ex for ex in details.executions if ex.subtask == 0 and ex.attempt == 0]
    assert failed.error is not None and "injected failure" in failed.error.message
    assert [ex.state for ex in details.executions if ex.subtask == 1] == [ExecutionState.FINISHED]


class Ticking(MapFunction):
    """Adds 1 to the IntCounter "ticks" per record, slowly."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.ticks = IntCounter()
        runtime_context.add_accumulator("ticks", self.ticks)

    def map(self, value: int) -> int:
        time.sleep(0.1)
        self.ticks.add(1)
        return value


@pytest.mark.parametrize("behind_exchange", [False, True], ids=["chained-to-source", "behind-rebalance"])
def test_live_accumulators_arrive_before_the_job_ends(session, env, behind_exchange: bool) -> None:
    total = 60  # 30 records of 0.1 s per subtask: about 3 s
    wire = MessageSigner(session.info.key, sender="test-live-acc")
    sub = subscribe(session)
    try:
        source = env.from_collection(range(total))
        stream = source.rebalance().map(Ticking()) if behind_exchange else source.map(Ticking())
        client = stream.execute_and_collect_async("live accumulators")
        seen: list[Any] = []
        deadline = time.monotonic() + JOB_TIMEOUT
        while time.monotonic() < deadline:
            if not sub.poll(500):
                continue
            got = wire.unpack(sub.recv_multipart()[1:])
            assert got is not None
            msg = got[1]
            if getattr(msg, "job_id", None) != client.job_id:
                continue
            seen.append(msg)
            if isinstance(msg, JobStatusChanged) and msg.status.is_globally_terminal:
                break
    finally:
        sub.close()
    assert seen and isinstance(seen[-1], JobStatusChanged), "no terminal JobStatusChanged arrived"
    assert seen[-1].status is JobStatus.FINISHED
    live = [m.values.get("ticks") for m in seen
            if isinstance(m, AccumulatorsUpdated) and not m.final]
    assert any(v is not None and 0 < v < total for v in live), \
        f"live values of 'ticks' before FINISHED: {live}"
    assert client.get_job_execution_result(JOB_TIMEOUT).get_accumulator_result("ticks") == total


# -- bad input -------------------------------------------------------------------------------

def test_unhashable_key_fails_the_job(env) -> None:
    with pytest.raises(sessioncluster.JobExecutionException) as info:
        (env.from_collection(range(10)).key_by(lambda x: [x % 2])
            .reduce(lambda a, b: a + b).execute_and_collect("unhashable key"))
    assert info.value.status is JobStatus.FAILED
    assert "unhashable" in str(info.value)


def test_read_text_file_of_a_missing_path_names_the_path(env, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-dir" / "input.txt")
    with pytest.raises(Exception) as info:
        env.read_text_file(missing).execute_and_collect("missing file")
    assert not isinstance(info.value, (AttributeError, NotImplementedError)), repr(info.value)
    if isinstance(info.value, sessioncluster.JobExecutionException):
        assert info.value.status is JobStatus.FAILED
    assert missing in str(info.value)


def add_exclamation(value: int) -> str:
    return value + "!"  # TypeError: an int plus a str


def test_type_error_reports_operator_subtask_and_user_line(env) -> None:
    with pytest.raises(sessioncluster.JobExecutionException) as info:
        env.from_collection(range(10)).map(add_exclamation).name("exclaim").execute_and_collect("type error")
    text = str(info.value)
    assert info.value.status is JobStatus.FAILED
    assert "operator 'exclaim'" in text
    assert re.search(r"subtask [12]/2\b", text), text
    assert "TypeError" in text
    assert 'return value + "!"' in text and "in add_exclamation" in text
    assert info.value.error is not None and info.value.error.subtask in ("1/2", "2/2")
