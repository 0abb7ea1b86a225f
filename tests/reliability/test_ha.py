"""High availability, with both backends (files in the session directory, and a real ZooKeeper
server from Debian's zookeeper package): the leader killed -9 mid-job, a warm standby takes
over and recovers the job, the client gets the right result without doing anything; fencing of
a deposed leader; a ZooKeeper that goes away; a standby for a session without HA.

CI kills the leader mid-job once with ZooKeeper (the file backend's failover is in the
streaming jobs' and SQL catalog's test and the deposed-leader test); ``SESSIONCLUSTER_FULL_RELIABILITY=1``
ten times with each backend.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster import cli
from sessioncluster.client.gateway import DispatcherError, DispatcherGateway
from sessioncluster.client.restclient import RestClient
from sessioncluster.client.sqlclient import SqlClient, SqlGatewayClient
from sessioncluster.cluster import leader as discovery
from sessioncluster.cluster.connection import ConnectionInfo, connection_path, free_port, session_dir
from sessioncluster.jobmanager import ha
from sessioncluster.protocol.messages import JobList, JobStatusChanged, ListJobs
from sessioncluster.pyflink.common.serialization import Encoder
from sessioncluster.pyflink.datastream.connectors.file_system import FileSink, OutputFileConfig

from ..conftest import SESSION_NAME
from ..helpers import FULL, descendants, full_only, wait_gone, wait_until
from ..integration.test_streaming import (
    RESULT_TIMEOUT,
    ROUNDS,
    _lines,
    drop,
    python_counts,
    streaming_env,
    word_count_of,
    word_counts,
)

pytestmark = pytest.mark.integration

#: one kill per backend in CI (each ~50 s); the full run chains 10 failovers, standby after standby
KILLS = 10 if FULL else 1
ZOOKEEPER_KILLS = KILLS
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
RECORDS = 120


class ZooKeeperServer:
    """Debian's ZooKeeper, standalone, on 127.0.0.1 (tickTime 500 ms: sessions of 1–10 s)."""

    def __init__(self, data: Path) -> None:
        if not ZOOKEEPER_JAR.exists():
            pytest.fail(f"{ZOOKEEPER_JAR} is missing: apt-get install zookeeper (.ci/install)")
        self.data, self.port = data, free_port()
        self.quorum = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["java", "-Dzookeeper.admin.enableServer=false", "-cp", str(ZOOKEEPER_JAR),
             "org.apache.zookeeper.server.ZooKeeperServerMain", str(self.port), str(self.data),
             "500"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        zk = wait_until(lambda: _try_connect(self.quorum), 60.0, "ZooKeeper to answer")
        zk.stop()
        zk.close()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _try_connect(quorum: str) -> Any:
    try:
        return discovery.zk_client(quorum, timeout=1.0)
    except discovery.NoLeaderError:
        return None


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.kill()


def slow(x: int) -> int:
    time.sleep(0.05)
    return x * 2


def _log_text(name: str) -> str:
    d = session_dir(name)
    return "".join(p.read_text(errors="replace") for p in
                   [d / "jobmanager.log", *sorted((d / "ha").glob("standby-*.log"))] if p.exists())


def _kill_leader_mid_job(session: sessioncluster.Session, env: Any, standby: int,
                         i: int) -> tuple[str, float, float]:
    """Kill the leader -9 while a job runs; the job's id, and the seconds from the kill to a
    new leader and to the client's result."""
    leader, old_info = session.info.jobmanager_pid, session.info
    client = env.from_collection(range(RECORDS)).map(slow).execute_and_collect_async(f"killed {i}")
    events: list[Any] = []
    session.events.subscribe(client.job_id, lambda topic, msg: events.append(msg))
    wait_until(lambda: client.get_job_status() is sessioncluster.JobStatus.RUNNING, 60.0,
               "the job to run")
    time.sleep(1.0)  # mid-job: RECORDS x 50 ms over 2 slots is 3 s of work
    os.kill(leader, signal.SIGKILL)
    killed = time.monotonic()
    new = discovery.retrieve_leader(old_info)  # what every client does
    new_leader_after = time.monotonic() - killed
    assert new.jobmanager_pid == standby and new.epoch == old_info.epoch + 1
    # the client follows the new leader by itself and gets the whole, right result
    assert sorted(client.collect()) == [2 * x for x in range(RECORDS)]
    result_after = time.monotonic() - killed
    assert session.info.jobmanager_pid == standby
    # ... and so do the live events (the widgets' source) and the REST API
    wait_until(lambda: any(isinstance(m, JobStatusChanged) and m.status.is_globally_terminal
                           for m in events), 30.0, "the new leader's job events")
    rest = RestClient.of(session).jobs()
    assert {j["jid"]: j["state"] for j in rest}[client.job_id] == "FINISHED"
    return client.job_id, new_leader_after, result_after


def _results(name: str, backend: str, quorum: str | None) -> tuple[Any, Any]:
    services = ha.ha_services(name, backend, quorum)
    return services, services.job_result_store


@pytest.mark.parametrize("backend", [
    full_only("file", "a leader on the file backend is also killed mid-job by the streaming "
              "jobs' failover test and the deposed-leader test"),
    "zookeeper"], ids=["file", "zookeeper"])
def test_leader_killed_mid_job_a_standby_recovers_it(backend: str, request: pytest.FixtureRequest,
                                                     sc_home: Path, figures: dict) -> None:
    quorum = request.getfixturevalue("zookeeper").quorum if backend == "zookeeper" else None
    name = f"ha-{backend}"
    kills = ZOOKEEPER_KILLS if backend == "zookeeper" else KILLS
    session = sessioncluster.start(name, taskmanagers=0, slots=2, quiet=True, ha=backend,
                                   zookeeper_quorum=quorum)
    pids: set[int] = set()
    failovers, results_after = [], []
    job_ids: list[str] = []
    try:
        standby = sessioncluster.start_standby(name)
        env = session.get_execution_environment()
        env.set_parallelism(2)
        for i in range(kills):
            pids |= descendants([session.info.jobmanager_pid, standby])
            job_id, new_leader_after, result_after = _kill_leader_mid_job(session, env, standby, i)
            job_ids.append(job_id)
            failovers.append(new_leader_after)
            results_after.append(result_after)
            standby = sessioncluster.start_standby(name)  # the next warm standby
        pids |= descendants([session.info.jobmanager_pid, standby])

        # every job is in the history once, FINISHED; none lost, none recorded twice
        jobs = {j.job_id: j for j in session.jobs()}
        assert [jobs[j].status for j in job_ids] == [sessioncluster.JobStatus.FINISHED] * kills
        services, store = _results(name, backend, quorum)
        try:
            for i, job_id in enumerate(job_ids):
                result = store.get(job_id)
                assert result is not None and result["status"] == "FINISHED"
                assert result["epoch"] == i + 2  # finished by the leader that recovered it
            assert services.job_graph_store.job_ids() == []
        finally:
            services.close()
        assert "already had a result" not in _log_text(name)
        assert _log_text(name).count("recovered job") == kills
    finally:
        session.stop()
    assert wait_gone(sorted(pids), timeout=60) == []
    figures[f"ha_failover_{backend}"] = {
        "kills": kills,
        "new_leader_after_s": [round(t, 2) for t in failovers],
        "new_leader_median_s": round(statistics.median(failovers), 2),
        "result_after_kill_s": [round(t, 2) for t in results_after],
    }


def shout(word: str) -> str:
    return word.upper() + "!"


def _start_counts(session: sessioncluster.Session, src: Path, out: Path) -> Any:
    """A STREAMING DataStream word count from ``src`` into a FileSink at ``out``; its client."""
    env = streaming_env(session)
    counts = word_counts(env, src)
    counts.sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
                   .with_output_file_config(OutputFileConfig.builder().build()).build())
    return env.execute_async("counts through a failover")


def _start_shouting(session: sessioncluster.Session, src: Path, out: Path) -> tuple[Any, Any]:
    """The session's SQL catalog (two tables, a view, a Python function) and a streaming
    INSERT from ``src`` into ``out`` that calls the function; the table environment and the
    INSERT's job client."""
    from sessioncluster.api.table.types import DataTypes
    from sessioncluster.client.table_environment import TableEnvironment
    from sessioncluster.pyflink.table import EnvironmentSettings
    from sessioncluster.pyflink.table.udf import udf

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    t_env.execute_sql(f"""CREATE TABLE words (word STRING) WITH ('connector' =
        'filesystem', 'path' = '{src}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    t_env.execute_sql(f"""CREATE TABLE shouted (word STRING, loud STRING) WITH (
        'connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv')""")
    t_env.execute_sql("CREATE VIEW long_words AS SELECT word FROM words WHERE CHAR_LENGTH(word) > 3")
    t_env.create_temporary_system_function("shout", udf(shout, result_type=DataTypes.STRING()))
    return t_env, t_env.execute_sql("INSERT INTO shouted SELECT word, shout(word) FROM words"
                                    ).get_job_client()


def _counts_went_on(out: Path, rounds: int) -> None:
    """The word counts' updates of ``rounds`` rounds, none written twice, the state kept."""
    lines = [word_count_of(line) for line in _lines(out)]
    assert len(lines) == sum(len(line.split()) for r in ROUNDS[:rounds] for line in r)
    # part files are named by random uids, not in time order: a count's latest is its largest
    latest: dict[str, int] = {}
    for w, c in lines:
        latest[w] = max(latest.get(w, 0), c)
    assert latest == python_counts(ROUNDS[:rounds])


def test_streaming_jobs_and_the_sql_catalog_survive_a_failover(sc_home: Path,
                                                                tmp_path: Path) -> None:
    """The leader killed -9 while a STREAMING DataStream job and a streaming SQL INSERT run:
    the new leader restarts both from their latest completed checkpoints (the counts go on
    from there, no update or row before it written twice) and has the session's SQL catalog."""
    from sessioncluster.client.table_environment import TableEnvironment
    from sessioncluster.pyflink.table import EnvironmentSettings

    name = "ha-stream"
    src, out, words, shouted = (tmp_path / n for n in ("in", "out", "words", "shouted"))
    src.mkdir()
    words.mkdir()
    session = sessioncluster.start(name, taskmanagers=0, slots=2, quiet=True, ha="file")
    try:
        standby = sessioncluster.start_standby(name)
        counts = _start_counts(session, src, out)
        t_env, insert = _start_shouting(session, words, shouted)
        drop(src, "round-0.txt", ROUNDS[0])
        (words / "a.csv").write_text("to\nbe\nhello\n")
        first = sum(len(line.split()) for line in ROUNDS[0])
        wait_until(lambda: len(_lines(out)) >= first, RESULT_TIMEOUT, "round 0's updates")
        wait_until(lambda: len(_lines(shouted)) == 3, RESULT_TIMEOUT, "the first file's rows")
        for job in (counts, insert):
            wait_until(lambda job=job: job.details().streaming["counts"]["completed"] >= 1, 60.0,
                       "a completed checkpoint")
        # a SQL client of the gateway endpoint, with a SET of its session's own
        printed = io.StringIO()
        gateway = SqlGatewayClient(RestClient.of(session), {"execution.runtime-mode": "batch"},
                                   reconnect=lambda: RestClient.of(sessioncluster.connect(name)))
        sql_client = SqlClient(gateway, printed)
        assert sql_client.run_statement("SET 'pipeline.name' = 'through-the-failover'")
        time.sleep(1.0)  # no micro-batch in flight: round 0 and a.csv are checkpointed
        old = session.info
        os.kill(old.jobmanager_pid, signal.SIGKILL)
        assert discovery.retrieve_leader(old).jobmanager_pid == standby
        for job in (counts, insert):
            wait_until(lambda job=job: job.get_job_status() is sessioncluster.JobStatus.RUNNING,
                       60.0, "the recovered jobs to run")
        # the client's next statement finds the old leader gone: not known whether it ran; the
        # client is on the new leader then, in a session with its properties
        assert not sql_client.run_statement("SHOW TABLES")
        assert "whether the statement ran is not known" in printed.getvalue()
        assert sql_client.run_statement("SHOW TABLES")
        assert "|    shouted |" in printed.getvalue().split("whether the statement ran")[1]
        assert gateway.configuration()["pipeline.name"] == "through-the-failover"
        drop(src, "round-1.txt", ROUNDS[1])
        (words / "b.csv").write_text("world\n")
        second = sum(len(line.split()) for line in ROUNDS[1])
        wait_until(lambda: len(_lines(out)) >= first + second, RESULT_TIMEOUT,
                   "round 1's updates from the new leader")
        wait_until(lambda: len(_lines(shouted)) >= 4, RESULT_TIMEOUT, "the new leader's rows")
        time.sleep(2.0)
        _counts_went_on(out, 2)
        rows = sorted(tuple(row) for row in csv.reader(_lines(shouted)))
        assert rows == sorted((w, f"{w.upper()}!") for w in ("to", "be", "hello", "world"))
        log_text = _log_text(name)
        assert "resumes from its latest checkpoint" not in log_text  # no savepoint here
        assert f"recovered job {counts.job_id}" in log_text
        assert f"recovered job {insert.get_job_id()}" in log_text

        def column(statement: str) -> list:
            return sorted(r[0] for r in t_env.execute_sql(statement).collect())

        batch = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
        assert {"words", "shouted", "long_words"} <= set(column("SHOW TABLES"))
        assert "shout" in column("SHOW FUNCTIONS")
        assert sorted(tuple(r) for r in batch.execute_sql(
            "SELECT word, shout(word) FROM long_words").collect()) == [
            ("hello", "HELLO!"), ("world", "WORLD!")]
        counts.cancel()
        insert.cancel()
        assert counts.wait(60).status is sessioncluster.JobStatus.CANCELED
    finally:
        session.stop()  # its gateway session too


def test_a_deposed_leader_suspends_its_jobs(sc_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fencing: the leader's lock taken from it (as in a split brain), it stops its jobs and
    records nothing of them; the JobManager that leads now runs the job once."""
    name = "ha-fence"
    session = sessioncluster.start(name, taskmanagers=0, slots=2, quiet=True, ha="file")
    first = session.info.jobmanager_pid
    try:
        second = sessioncluster.start_standby(name)
        env = session.get_execution_environment()
        env.set_parallelism(2)
        client = env.from_collection(range(RECORDS)).map(slow).execute_and_collect_async("fenced")
        wait_until(lambda: client.get_job_status() is sessioncluster.JobStatus.RUNNING, 60.0,
                   "the job to run")
        time.sleep(0.5)
        (discovery.ha_dir(name) / "leader.lock").unlink()
        assert sorted(client.collect()) == [2 * x for x in range(RECORDS)]
        wait_until(lambda: "lost the leadership" in _log_text(name), 30.0, "the leader to step down")
        assert "suspending its jobs" in _log_text(name)
        services = ha.FileHaServices(name)
        try:
            assert services.read_epoch() >= 2
            result = services.job_result_store.get(client.job_id)
            assert result is not None and result["status"] == "FINISHED" and result["epoch"] >= 2
        finally:
            services.close()
        # both JobManagers live on; exactly one leads, the other answers as a standby
        leaders = []
        for pid in (first, second):
            own = ConnectionInfo.read(discovery.ha_dir(name) / f"jobmanager-{pid}.json")
            gateway = DispatcherGateway(dataclasses.replace(own, ha=""))  # no following
            try:
                gateway.request(ListJobs(), JobList, timeout=10.0)
                leaders.append(pid)
            except DispatcherError as exc:
                assert exc.kind == "not_leader"
            finally:
                gateway.close()
        assert leaders == [session.info.jobmanager_pid]
        standby = first if leaders == [second] else second
        assert cli.main(["status", name]) == 0
        assert f"high availability: file, leader epoch {session.info.epoch}, standby " \
            f"JobManagers: pid {standby}" in capsys.readouterr().out
        jobs = [j for j in session.jobs() if j.job_id == client.job_id]
        assert [j.status for j in jobs] == [sessioncluster.JobStatus.FINISHED]
    finally:
        session.stop()
    assert discovery.standby_pids(name) == []


def test_zookeeper_unreachable_then_back(sc_home: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader steps down when ZooKeeper goes; clients say so; when it is back, the
    JobManager leads again (a new epoch) and the client goes on."""
    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    monkeypatch.setattr(discovery, "LEADER_TIMEOUT", 3.0)
    name = "ha-zk-lost"
    session = sessioncluster.start(name, taskmanagers=0, slots=1, quiet=True, ha="zookeeper",
                                   zookeeper_quorum=server.quorum)
    try:
        env = session.get_execution_environment()
        assert env.from_collection([1, 2]).map(lambda x: x + 1).execute_and_collect() == [2, 3]
        server.kill()
        wait_until(lambda: "lost the leadership" in _log_text(name), 30.0, "the leader to step down")
        with pytest.raises(sessioncluster.JobManagerGoneError, match=f"ZooKeeper at {server.quorum}"):
            session.jobs()
        server.start()
        # the JobManager reconnects, is elected again and publishes itself: seconds on a busy
        # machine, so the client waits as long as it does by default
        monkeypatch.setattr(discovery, "LEADER_TIMEOUT", 30.0)
        assert len(session.jobs()) == 1  # the client waits for the leader again
        # the same JobManager leads again, with a new epoch
        leader = ConnectionInfo.read(connection_path(name))
        assert (leader.jobmanager_pid, leader.epoch) == (session.info.jobmanager_pid, 2)
        assert env.from_collection([3]).map(lambda x: x + 1).execute_and_collect() == [4]
    finally:
        session.stop()
        server.kill()


def test_standby_of_a_session_without_ha_is_refused(session: sessioncluster.Session) -> None:
    with pytest.raises(discovery.NotHaSessionError, match="was not started with --ha"):
        sessioncluster.start_standby(SESSION_NAME)
    with pytest.raises(discovery.NotHaSessionError, match="no session cluster named 'nope'"):
        sessioncluster.start_standby("nope")
    out = subprocess.run(["sessioncluster", "start-standby", SESSION_NAME], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and "was not started with --ha" in out.stderr
