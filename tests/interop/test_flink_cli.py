"""Flink 2.3's own command-line client against the shared session's REST API (opt-in: set
``SESSIONCLUSTER_REAL_FLINK_PYTHON`` to a Python with ``apache-flink`` 2.3, whose package holds
``bin/flink`` and Flink's jars; see tests/data/flink/README.md).

``flink list``, ``flink savepoint``, ``flink stop --savepointPath`` and ``flink cancel`` with
``-m 127.0.0.1:PORT``, the token in ``FLINK_REST_CLIENT_HEADERS``; the job stopped with Flink's
CLI is then restored from its savepoint (its keyed operator has no uid(): Flink generates one)
and its counts go on."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

import sessioncluster
from sessioncluster.client.restclient import RestClient
from sessioncluster.pyflink.common import (
    Configuration,
    Duration,
    Encoder,
    Types,
    WatermarkStrategy,
)
from sessioncluster.pyflink.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    StreamFormat,
)

from ..helpers import wait_until
from ..integration.test_streaming import _lines, streaming_env, word_count_of

FLINK_PYTHON = os.environ.get("SESSIONCLUSTER_REAL_FLINK_PYTHON")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not FLINK_PYTHON, reason="SESSIONCLUSTER_REAL_FLINK_PYTHON not set")]


@functools.cache
def flink_home() -> str:
    """The directory of that Python's PyFlink package (its ``bin/flink`` and Flink's jars)."""
    assert FLINK_PYTHON is not None
    return subprocess.run([FLINK_PYTHON, "-c", "import pyflink, os; print(os.path.dirname("
                           "pyflink.__file__))"], capture_output=True, text=True,
                          check=True).stdout.strip()


def flink(session: sessioncluster.Session, *args: str) -> str:
    """Flink's ``bin/flink`` of that Python's PyFlink, against the session; its output."""
    assert FLINK_PYTHON is not None
    rest = RestClient.of(session)
    env = {**os.environ, "FLINK_REST_CLIENT_HEADERS": f"Authorization:Bearer {rest.token}",
           "PATH": f"{Path(FLINK_PYTHON).parent}:{os.environ['PATH']}"}
    done = subprocess.run([f"{flink_home()}/bin/flink", args[0], "-m",
                           rest.url.removeprefix("http://"), *args[1:]],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def counts(session: sessioncluster.Session, src: Path, out: Path,
           savepoint: str | None = None) -> str:
    """A STREAMING word count of the files dropped into ``src`` into a FileSink at ``out``,
    its keyed sum without a uid(); the job's id."""
    env = streaming_env(session)
    if savepoint is not None:
        env.configure(Configuration().set_string("execution.savepoint.path", savepoint))
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    counted = (env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
               .flat_map(lambda line: [(w, 1) for w in line.split()],
                         output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
               .key_by(lambda t: t[0], key_type=Types.STRING()).sum(1))  # no uid()
    counted.sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).build())
    return env.execute_async("counts for flink's cli").job_id


def latest_counts(out: Path) -> dict[str, int]:
    latest: dict[str, int] = {}
    for word, n in map(word_count_of, _lines(out)):
        latest[word] = max(latest.get(word, 0), n)
    return latest


def test_flinks_cli_lists_savepoints_stops_and_cancels(session: sessioncluster.Session,
                                                       tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "1.txt").write_text("a b a\n")
    job = counts(session, src, out)
    wait_until(lambda: f"{job} : counts for flink's cli (RUNNING)" in flink(session, "list"), 60.0,
               "flink list to show the job RUNNING")
    wait_until(lambda: latest_counts(out) == {"a": 2, "b": 1}, 60.0, "the first file's counts")
    saved = flink(session, "savepoint", job, f"file://{tmp_path}/sp")
    assert "Savepoint completed. Path: " + str(tmp_path / "sp") in saved
    stopped = flink(session, "stop", "--savepointPath", f"file://{tmp_path}/sp2", job)
    location = stopped.split("Savepoint completed. Path: ")[1].split()[0]
    assert Path(location).parent == tmp_path / "sp2"
    wait_until(lambda: f"{job} : counts for flink's cli (FINISHED)" in flink(session, "list", "-a"),
               60.0, "the stopped job FINISHED in flink list -a")
    (src / "2.txt").write_text("a c\n")
    restored = counts(session, src, out, location)
    client = session.job(restored)
    # the keyed sums' state came back: a was 2, and goes on to 3
    wait_until(lambda: latest_counts(out) == {"a": 3, "b": 1, "c": 1}, 90.0, "the restored counts")
    assert f"Cancelled job {restored}." in flink(session, "cancel", restored)
    wait_until(lambda: client.get_job_status() is sessioncluster.JobStatus.CANCELED, 30.0,
               "the job CANCELED")
