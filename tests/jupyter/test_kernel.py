"""The magics and widgets in a real IPython kernel against a real session cluster.

One kernel and one session (``--taskmanagers 0``: Spark in local mode) for the whole module;
the tests run in file order and the last one stops the session with the magic. Assertions
are on what the widgets recorded (their ``history``), never on timing.
"""

from __future__ import annotations

import collections
import datetime
import html
import os
import signal
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from sessioncluster.client.session import Session
from sessioncluster.cluster.connection import ConnectionInfo, pid_alive

from .kernel import WIDGET_VIEW, CellResult, Kernel

pytestmark = pytest.mark.integration

NAME = f"jupyter-{os.getpid()}"

SETUP = '''
import json, time
import sessioncluster
from sessioncluster import Histogram, IntCounter, MapFunction
from ipywidgets.widgets.widget import _instances as _widgets

def wait_until(predicate, timeout=120.0):
    """Wait for a condition (never a fixed sleep); raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.05)

def seen(widget, kind):
    return [v for k, v in widget.history if k == kind]

class SlowCount(MapFunction):
    """Adds 1 to the IntCounter 'records' per record, after sleeping ``delay`` seconds."""
    def __init__(self, delay):
        self.delay = delay
    def open(self, runtime_context):
        self.records = IntCounter()
        runtime_context.add_accumulator("records", self.records)
    def map(self, value):
        time.sleep(self.delay)
        self.records.add(1)
        return value

class Lengths(MapFunction):
    """A Histogram of the lengths of str(record)."""
    def open(self, runtime_context):
        self.lengths = Histogram()
        runtime_context.add_accumulator("lengths", self.lengths)
    def map(self, value):
        self.lengths.add(len(str(value)))
        return value

def magics():
    return get_ipython().magics_manager.registry["SessionClusterMagics"]
'''


class Cluster:
    """The kernel and what the tests need to know about its session."""

    def __init__(self, kernel: Kernel, home: Path) -> None:
        self.kernel = kernel
        self.home = home
        self.start_result: Any = None
        self.info: ConnectionInfo | None = None
        self.pids: list[int] = []
        #: the kernel's environment (a second kernel on the same session uses it too)
        self.env: dict[str, str] = {}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("sc-jupyter-home")
    env = {**os.environ, "SESSIONCLUSTER_HOME": str(home), "SESSIONCLUSTER_VALIDATE": "1"}
    kernel = Kernel(env)
    c = Cluster(kernel, home)
    c.env = env
    try:
        kernel.run(SETUP)
        kernel.run("%load_ext sessioncluster")
        c.start_result = kernel.run(
            f"session = %flink_session start --name {NAME} --taskmanagers 0 --slots 2", timeout=300)
        c.info = ConnectionInfo.read(home / "sessions" / NAME / "connection.json")
        overview = Session(c.info).status()
        c.pids = [c.info.jobmanager_pid] + [p for tm in overview.taskmanagers
                                            for p in (tm.pid, tm.daemon_pid, tm.jvm_pid)]
        yield c
    finally:
        kernel.shutdown()
        if c.info is not None and pid_alive(c.info.jobmanager_pid):
            Session(c.info).stop()  # a test failed before the stop test: leave nothing behind
        for pid in c.pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_start_binds_the_session_and_shows_the_cluster(cluster: Cluster) -> None:
    k = cluster.kernel
    assert cluster.start_result.widget_ids, "start shows the cluster widget"
    display_id, data = _display(cluster.start_result)
    assert set(data) == {WIDGET_VIEW, "text/html", "text/plain"}
    # the snapshot shows the registered TaskManager (in place, if it was not known when shown)
    k.run("w0 = magics()._cluster_widgets[0]\n"
          "wait_until(lambda: '1 of 1 TaskManagers' in w0.snapshot.sent[-1][1]['text/plain'])")
    k.run("pass")  # what the widget's thread sent before is read by now
    latest = ([u["content"]["data"] for u in _updates(k, display_id)] or [data])[-1]
    assert f"session cluster '{NAME}': ready, 1 of 1 TaskManagers" in latest["text/plain"]
    assert NAME in latest["text/html"]
    got = k.run("print(json.dumps([type(session).__name__, session.name, "
                "session.info.jobmanager_pid]))").json()
    assert got == ["Session", NAME, cluster.info.jobmanager_pid]
    # starting a running name connects to it
    again = k.run(f"again = %flink_session start --name {NAME} --taskmanagers 0 --slots 2\n"
                  "print(json.dumps(again.info.jobmanager_pid))")
    assert again.json() == cluster.info.jobmanager_pid
    assert "already running" in again.stderr
    status = k.run("%flink_session status")
    assert len(status.widget_ids) == 1
    text = k.run("w = _widgets[%r]\nwait_until(lambda: seen(w, 'overview'))\nprint(w.body.value)"
                 % status.widget_ids[0]).stdout
    assert NAME in text and cluster.info.dispatcher in text and "driver" in text
    usage = k.run("%flink_session --help").stdout
    assert "Examples" in usage and "--taskmanagers" in usage and "cancel" in usage
    assert "?token=" in k.run("%flink_session ui").stdout.splitlines()[0]
    refused = k.run(f"%flink_session standby {NAME}", allow_error=True)
    assert "was not started with --ha" in str(refused.messages)
    page = k.run("session").data(("execute_result",))[0]["text/html"]
    assert NAME in page and "TaskManagers" in page


def test_attached_job_widget_is_live(cluster: Cluster) -> None:
    """64 records at 0.1 s each over two subtasks: about 3 s of RUNNING with live counts
    (behind an exchange: subtasks report live accumulators every 16 records there)."""
    k = cluster.kernel
    cell = k.run('''
        env = session.get_execution_environment()
        env.set_parallelism(2)
        out = (env.from_collection(range(64)).rebalance().map(SlowCount(0.1))
                  .execute_and_collect("slow count"))
        assert sorted(out) == list(range(64))
    ''')
    assert len(cell.widget_ids) == 1, "an attached job in a kernel shows its job widget"
    model_id = cell.widget_ids[0]
    got = k.run(f'''
        w = _widgets[{model_id!r}]
        wait_until(w.stopped.is_set)
        print(json.dumps({{"history": w.history, "job_id": w.job_id,
                          "vertices": [v.name for v in w.view.job_graph.vertices]}}))
    ''').json()
    history = got["history"]
    statuses = [v for kind, v in history if kind == "status"]
    assert "RUNNING" in statuses and statuses[-1] == "FINISHED"
    counts = [v.get("records") for kind, v in history if kind == "accumulators"]
    assert counts[-1] == 64
    assert any(c is not None and 0 < c < 64 for c in counts), f"no live value in {counts}"
    done, total = [v for kind, v in history if kind == "progress"][-1]
    assert done == total == 4  # two JobVertices of parallelism 2
    last_states = [v for kind, v in history if kind == "vertex_states"][-1]
    assert set(last_states.values()) == {"FINISHED"}
    # the frontend got the updates pushed while the cell ran: header updates with RUNNING first
    headers = [u["value"] for u in k.comm_updates(_child_id(k, model_id, "header"))
               if "value" in u]
    running = [i for i, h in enumerate(headers) if ">RUNNING<" in h]
    finished = [i for i, h in enumerate(headers) if ">FINISHED<" in h]
    assert running and finished and running[0] < finished[0]
    # the cluster widget of start heard the job start and end on topic "cluster"
    jobs = k.run('''
        cw = magics()._cluster_widgets[0]
        wait_until(lambda: ("job", (%r, "FINISHED")) in cw.history)
        print(json.dumps(seen(cw, "job")))
    ''' % got["job_id"]).json()
    assert [got["job_id"], "RUNNING"] in jobs and [got["job_id"], "FINISHED"] in jobs
    # the output carries a snapshot beside the widget view, updated in place in this cell
    display_id, data = _display(cell)
    assert set(data) == {WIDGET_VIEW, "text/html", "text/plain"}
    updates = _updates(k, display_id)
    assert updates, "the final snapshot is published with the same display id"
    assert {u["parent_header"]["msg_id"] for u in updates} == {cell.msg_id}
    final = updates[-1]["content"]["data"]
    assert final[WIDGET_VIEW] == data[WIDGET_VIEW]
    text, page = final["text/plain"], final["text/html"]
    assert text.startswith(f"Job 'slow count' ({got['job_id']}): FINISHED, 4/4 subtasks")
    assert "64 records in" in text and "  records: 64" in text
    assert "<svg" in page and ">FINISHED<" in page and "<code>64</code>" in page


def test_snapshot_of_a_job_shown_before_a_later_cell_ends_it(cluster: Cluster) -> None:
    """A job widget shown as a cell's value; the job ends while a later cell runs: the update
    goes to the cell that showed it and to the running cell (nbclient reads only that one)."""
    k = cluster.kernel
    shown = k.run('''
        client = (env.from_collection(range(30)).map(SlowCount(0.1))
                     .execute_and_collect_async("shown early"))
        client.widget()
    ''')
    display_id, data = _display(shown)
    assert "shown early" in data["text/plain"]
    later = k.run(f'''
        client.wait(120)
        wait_until(_widgets[{data[WIDGET_VIEW]["model_id"]!r}].stopped.is_set)
    ''')
    updates = _updates(k, display_id)
    assert {u["parent_header"]["msg_id"] for u in updates} == {shown.msg_id, later.msg_id}
    assert all("FINISHED, " in u["content"]["data"]["text/plain"] for u in updates)
    # shown and waited for in one cell: JobClient.wait lets the final snapshot out in that cell
    same = k.run('''
        client = (env.from_collection(range(10)).map(SlowCount(0.1))
                     .execute_and_collect_async("same cell"))
        display(client.widget())
        assert len(client.collect()) == 10
    ''')
    display_id, _data = _display(same)
    updates = _updates(k, display_id)
    assert [u["parent_header"]["msg_id"] for u in updates] == [same.msg_id]
    assert "): FINISHED, " in updates[0]["content"]["data"]["text/plain"]


def _display(cell: CellResult) -> tuple[str, dict[str, Any]]:
    """The display id and data of the (first) widget a cell displayed."""
    msg = next(m for m in cell.messages
               if m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"])
    return msg["content"]["transient"]["display_id"], msg["content"]["data"]


def _updates(k: Kernel, display_id: str) -> list[dict[str, Any]]:
    """The update_display_data messages the kernel sent for one display id so far."""
    return [m for m in k.iopub if m["msg_type"] == "update_display_data"
            and m["content"]["transient"].get("display_id") == display_id]


def _child_id(k: Kernel, model_id: str, attribute: str) -> str:
    return k.run(f"print(json.dumps(_widgets[{model_id!r}].{attribute}.model_id))").json()


def test_cancel_button_cancels_a_running_job(cluster: Cluster) -> None:
    k = cluster.kernel
    got = k.run('''
        client = (env.from_collection(range(400)).map(SlowCount(0.25))
                     .execute_and_collect_async("to cancel"))
        w = client.widget()
        wait_until(lambda: "RUNNING" in seen(w, "status"))
        w.cancel_button.click()
        reply = client.wait(120)
        wait_until(w.stopped.is_set)
        print(json.dumps({"status": reply.status.value, "statuses": seen(w, "status"),
                          "cancel": seen(w, "cancel"), "disabled": w.cancel_button.disabled}))
    ''').json()
    assert got["status"] == "CANCELED"
    assert got["cancel"] and got["disabled"]
    assert got["statuses"][-1] == "CANCELED"


def test_jobs_and_cancel_magics(cluster: Cluster) -> None:
    k = cluster.kernel
    job_id = k.run('''
        client = (env.from_collection(range(400)).map(SlowCount(0.25))
                     .execute_and_collect_async("cancel by magic"))
        wait_until(lambda: client.get_job_status().value == "RUNNING")
        print(json.dumps(client.job_id))
    ''').json()
    jobs = k.run("%flink_session jobs").data()[0]
    assert job_id in jobs["text/plain"] and job_id in jobs["text/html"]
    assert "slow count" in jobs["text/plain"]
    assert "cancelling job" in k.run(f"%flink_session cancel {job_id}").stdout
    status = k.run("print(json.dumps(client.wait(120).status.value))").json()
    assert status == "CANCELED"
    bad = k.run("%flink_session cancel 00000000000000000000000000000000", allow_error=True)
    assert not bad.stdout


def test_failed_job_shows_the_users_traceback(cluster: Cluster) -> None:
    k = cluster.kernel
    cell = k.run('''
        def explode(value):
            if value == 3:
                raise ValueError("record three is bad")
            return value

        try:
            env.from_collection(range(6)).map(explode).execute_and_collect("explode")
        except sessioncluster.JobExecutionException:
            pass
    ''')
    got = k.run(f'''
        w = _widgets[{cell.widget_ids[0]!r}]
        wait_until(w.stopped.is_set)
        print(json.dumps({{"statuses": seen(w, "status"), "error": w.error.value}}))
    ''').json()
    assert got["statuses"][-1] == "FAILED"
    assert "ValueError: record three is bad" in got["error"] and "explode" in got["error"]
    # the cell's own source line, filled in from this kernel's linecache
    assert 'raise ValueError("record three is bad")' in html.unescape(got["error"])
    display_id, _data = _display(cell)
    final = _updates(k, display_id)[-1]["content"]["data"]
    assert "): FAILED" in final["text/plain"]
    assert "error: ValueError: record three is bad" in final["text/plain"]
    assert 'raise ValueError("record three is bad")' in html.unescape(final["text/html"])


def test_static_html_of_a_finished_job(cluster: Cluster) -> None:
    k = cluster.kernel
    got = k.run('''
        client = (env.from_collection(["a", "bb", "cc", "ddd", "e", "ffff"])
                     .map(SlowCount(0)).map(Lengths())
                     .key_by(lambda s: len(s)).reduce(lambda a, b: a + b)
                     .execute_and_collect_async("static html"))
        result = client.get_job_execution_result()
        print(json.dumps({"html": result._repr_html_(), "client_html": client._repr_html_(),
                          "names": [v.name for v in client.details().job_graph.vertices],
                          "accumulators": {n: (sorted(v.items()) if isinstance(v, dict) else v)
                                           for n, v in result.get_all_accumulator_results().items()}}))
    ''').json()
    page = got["html"]
    assert len(got["names"]) >= 2
    for name in got["names"]:
        assert html.escape(name) in page and html.escape(name) in got["client_html"]
    assert got["accumulators"]["records"] == 6
    assert ">6<" in page  # the final IntCounter, in its table cell
    for length, count in got["accumulators"]["lengths"]:
        assert f"{length}: {count}" in page
    assert "<svg" in page and "FINISHED" in page
    shown = k.run("result").data(("execute_result",))[0]
    assert "text/html" in shown and html.escape(got["names"][0]) in shown["text/html"]


def test_flink_sql_returns_a_dataframe(cluster: Cluster) -> None:
    k = cluster.kernel
    if not k.run("print(json.dumps(hasattr(session, 'sql')))").json():
        pytest.skip("Session.sql is not there yet")
    cell = k.run('''
        %%flink_sql --out squares
        SELECT n, n * n AS square FROM (VALUES (0), (1), (2), (3), (4)) AS t(n)
    ''')
    assert "square" in cell.data(("execute_result",))[0]["text/plain"]
    assert k.run("print(json.dumps(squares.square.tolist()))").json() == [0, 1, 4, 9, 16]
    box = cell.widget_ids[0]
    statuses = k.run(f'''
        box = _widgets[{box!r}]
        wait_until(lambda: len(box.children) >= 1, 30)
        wait_until(box.children[0].stopped.is_set)
        print(json.dumps(seen(box.children[0], "status")))
    ''').json()
    assert statuses[-1] == "FINISHED"


def _sql_results(cell: CellResult) -> list[dict[str, Any]]:
    """The live result's outputs of a ``%%flink_sql`` cell, in order (display, updates)."""
    return [m["content"]["data"] for m in cell.messages
            if m["msg_type"] in ("display_data", "update_display_data")
            and "sc-sql-result" in m["content"]["data"].get("text/html", "")]


def _result_rows(data: dict[str, Any]) -> list[list[str]]:
    """The rows of a live result's text/plain (header and summary line left out)."""
    return [line.split("\t") for line in data["text/plain"].splitlines()[1:-1]]


def test_flink_sql_streaming_table_mode_of_a_bounded_group_by(cluster: Cluster,
                                                               tmp_path: Path) -> None:
    """``--mode table`` of an updating GROUP BY over a bounded file ends with the right table,
    left in the output as plain HTML; ``{name}`` is a kernel variable (``{{`` a brace)."""
    k = cluster.kernel
    words = ["a", "b", "a", "c", "a", "b", "d"]
    source = tmp_path / "words"
    source.mkdir()
    (source / "w.csv").write_text("".join(f"{w}\n" for w in words))
    k.run(f"sql_path, sql_table = {str(source)!r}, 'kernel_words'")
    k.run('''
        %%flink_sql
        CREATE TABLE {sql_table} (word STRING)
        WITH ('connector' = 'filesystem', 'path' = '{sql_path}', 'format' = 'csv')
    ''')
    cell = k.run('''
        %%flink_sql --mode table --out sql_counts --chart bar --x word --y cnt
        SELECT word, COUNT(*) AS cnt, '{{x}}' AS braces FROM {sql_table} GROUP BY word
    ''')
    kinds = k.run(f"print(json.dumps([type(_widgets[i]).__name__ for i in {cell.widget_ids!r}]))")
    assert kinds.json() == ["VBox", "BokehModel"]  # the job widgets' box, the live chart
    expected = sorted([w, n, "{x}"] for w, n in collections.Counter(words).items())
    got = k.run("print(json.dumps(sorted([w, int(n), b] for w, n, b in "
                "sql_counts.itertuples(index=False))))").json()
    assert got == expected
    final = _sql_results(cell)[-1]
    assert "FINISHED" in final["text/html"] and "4 rows (table mode)" in final["text/plain"]
    assert sorted(_result_rows(final)) == [[w, str(n), b] for w, n, b in expected]
    assert not cell.data(("execute_result",))  # the live result is the output
    charts = [m["content"]["data"] for m in cell.messages
              if m["msg_type"] == "update_display_data"
              and "sc-sql-chart" in m["content"]["data"].get("text/html", "")]
    assert len(charts) == 1  # the chart's final state, static, in its own display
    assert WIDGET_VIEW in charts[0] and "cnt by word" in charts[0]["text/html"]
    assert all(f"&quot;{w}&quot;" in charts[0]["text/html"] for w in set(words))
    missing = k.run("%%flink_sql\nSELECT * FROM {no_such_variable}", allow_error=True)
    assert "no variable 'no_such_variable'" in str(missing.messages)
    k.run("%%flink_sql\nDROP TABLE {sql_table}")


def test_flink_sql_table_mode_keeps_max_rows_of_more_keys_on_the_jobmanager(
        cluster: Cluster, tmp_path: Path) -> None:
    """``--mode table`` of an updating GROUP BY over more keys than ``--max-rows``: the
    JobManager materialises the table and evicts its oldest rows, so the cell shows at most
    ``--max-rows`` rows (each with its right count) and says how many were dropped."""
    k = cluster.kernel
    counts = {f"k{i:02d}": i % 3 + 1 for i in range(30)}
    source = tmp_path / "keys"
    source.mkdir()
    (source / "k.csv").write_text("".join(f"{w}\n" * n for w, n in counts.items()))
    k.run(f"""
        %%flink_sql
        CREATE TABLE kernel_keys (word STRING)
        WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv')
    """)
    cell = k.run("""
        %%flink_sql --mode table --max-rows 10 --out sql_top
        SELECT word, COUNT(*) AS cnt FROM kernel_keys GROUP BY word
    """)
    results = _sql_results(cell)
    assert all(len(_result_rows(data)) <= 10 for data in results)
    final = results[-1]
    assert "FINISHED" in final["text/html"]
    assert "10 rows (table mode); 20 older rows dropped (--max-rows 10)" in final["text/plain"]
    shown = {w: int(n) for w, n in _result_rows(final)}
    assert len(shown) == 10 and all(counts[w] == n for w, n in shown.items())
    assert k.run("print(json.dumps(len(sql_top)))").json() == 10
    k.run("%%flink_sql\nDROP TABLE kernel_keys")


def test_flink_sql_streaming_append_mode_of_a_tumble_window(cluster: Cluster,
                                                            tmp_path: Path) -> None:
    k = cluster.kernel
    source = tmp_path / "events"
    source.mkdir()
    t0 = datetime.datetime(2026, 11, 26, 8, 0, 0)
    events = [(t0 + datetime.timedelta(seconds=s), w)
              for s, w in ((1, "a"), (4, "b"), (12, "a"), (15, "a"), (19, "c"), (33, "b"))]
    (source / "e.csv").write_text("".join(f"{t:%Y-%m-%d %H:%M:%S},{w}\n" for t, w in events))
    k.run(f'''
        %%flink_sql
        CREATE TABLE kernel_events (ts TIMESTAMP(3), word STRING,
            WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv')
    ''')
    cell = k.run('''
        %%flink_sql --mode append --out sql_windows
        SELECT window_start, window_end, COUNT(*) AS n
        FROM TABLE(TUMBLE(TABLE kernel_events, DESCRIPTOR(ts), INTERVAL '10' SECONDS))
        GROUP BY window_start, window_end
    ''')
    expected = collections.Counter(f"{t0 + datetime.timedelta(seconds=(t - t0).seconds // 10 * 10):%H:%M:%S}"
                                   for t, _ in events)
    final = _sql_results(cell)[-1]
    assert "FINISHED" in final["text/html"] and "(append mode)" in final["text/plain"]
    got = {row[0][11:19]: int(row[2]) for row in _result_rows(final)}
    assert got == dict(expected)
    assert k.run("print(json.dumps(list(sql_windows.columns)))").json() == \
        ["window_start", "window_end", "n"]
    k.run("%%flink_sql\nDROP TABLE kernel_events")


def test_flink_sql_streaming_result_is_live_and_interrupt_cancels(cluster: Cluster,
                                                                 tmp_path: Path) -> None:
    """A live ``--mode table`` result over a monitored directory changes while the job runs;
    interrupting the cell cancels the job and leaves the last table in the output."""
    k = cluster.kernel
    source = tmp_path / "live"
    source.mkdir()
    k.run(f'''
        %%flink_sql
        CREATE TABLE kernel_live (word STRING) WITH ('connector' = 'filesystem',
            'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')
    ''')
    refused = k.run('''
        %%flink_sql --mode append
        SELECT word, COUNT(*) FROM kernel_live GROUP BY word
    ''', allow_error=True)  # an updating query (its source is unbounded)
    assert "--mode append shows an append-only query" in str(refused.messages)
    cell = k.start('''
        %%flink_sql --mode table --refresh-interval 0.2
        SELECT word, COUNT(*) AS cnt FROM kernel_live GROUP BY word
    ''')

    (source / "1.csv").write_text("x\ny\nx\n")
    _wait_for_rows(k, cell, [["x", "2"], ["y", "1"]])
    (source / "2.csv").write_text("y\nz\n")
    _wait_for_rows(k, cell, [["x", "2"], ["y", "2"], ["z", "1"]])  # updated in place
    cluster.kernel.km.interrupt_kernel()
    k.finish(cell, timeout=120)
    final = _sql_results(cell)[-1]
    assert "CANCELED" in final["text/html"] and "interrupted" in final["text/plain"]
    assert sorted(_result_rows(final)) == [["x", "2"], ["y", "2"], ["z", "1"]]
    jobs = k.run("print(json.dumps([str(j.status.value) for j in sorted(session.jobs(), "
                 "key=lambda j: j.start_time) if j.name == 'collect']))").json()
    assert jobs[-2:] == ["CANCELED", "CANCELED"]  # the refused query's job too
    k.run("%%flink_sql\nDROP TABLE kernel_live")


def _wait_for_rows(k: Kernel, cell: CellResult, rows: list[list[str]]) -> None:
    """Follow a running cell's outputs until its live result shows ``rows`` (RUNNING)."""
    while True:
        msg = k.next_output(cell, timeout=240)
        assert msg is not None, f"the cell ended before showing {rows}: {cell.messages}"
        data = msg["content"].get("data", {})
        if "sc-sql-result" in data.get("text/html", "") and sorted(_result_rows(data)) == rows:
            assert "RUNNING" in data["text/html"]
            return


def _job_statuses(k: Kernel, name: str) -> list[str]:
    return k.run(f"print(json.dumps([str(j.status.value) for j in sorted(session.jobs(), "
                 f"key=lambda j: j.start_time) if j.name == {name!r}]))").json()


def _final_rows(cell: CellResult) -> list[list[str]]:
    return sorted(_result_rows(_sql_results(cell)[-1]))


def _counts(*files: list[str]) -> list[list[str]]:
    """Plain Python's ``SELECT word, COUNT(*) ... GROUP BY word`` over the files' words."""
    counts = collections.Counter(w for words in files for w in words)
    return sorted([w, str(n)] for w, n in counts.items())


def test_flink_sql_savepoint_on_interrupt_then_resume_continues_the_counts(
        cluster: Cluster, tmp_path: Path) -> None:
    """``--savepoint-dir``: the interrupt stops the job with a savepoint; ``--resume`` starts
    the same query from it, its table showing the restored result at once and the counts
    going on (the file read before is not read again). Without a savepoint ``--resume`` falls
    back to the cell's retained checkpoint; with neither it refuses. ``--job-name`` names the
    jobs; ``--detach`` leaves a query's job running."""
    k = cluster.kernel
    source, savepoints = tmp_path / "resume", tmp_path / "savepoints"
    source.mkdir()
    k.run(f'''
        %%flink_sql
        CREATE TABLE kernel_resume (word STRING) WITH ('connector' = 'filesystem',
            'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')
    ''')
    query = (f"%%flink_sql --mode table --refresh-interval 0.2 --savepoint-dir {savepoints} "
             "--job-name resumable-counts {resume}\n"
             "SELECT word, COUNT(*) AS cnt FROM kernel_resume GROUP BY word")
    files = [["x", "y", "x"], ["x", "z"], ["z", "w", "y"]]
    first = k.start(query.format(resume=""))
    (source / "1.csv").write_text("".join(f"{w}\n" for w in files[0]))
    _wait_for_rows(k, first, _counts(files[0]))
    k.km.interrupt_kernel()
    k.finish(first, timeout=300)
    final = _sql_results(first)[-1]
    assert "FINISHED" in final["text/html"] and "savepoint " in final["text/plain"]
    assert _job_statuses(k, "resumable-counts") == ["FINISHED"]

    second = k.start(query.format(resume="--resume"))
    _wait_for_rows(k, second, _counts(files[0]))  # the restored table, before any new file
    (source / "2.csv").write_text("".join(f"{w}\n" for w in files[1]))
    _wait_for_rows(k, second, _counts(*files[:2]))
    k.km.interrupt_kernel()
    k.finish(second, timeout=300)
    assert "Resuming from " in second.stdout and "savepoint-" in second.stdout
    assert _final_rows(second) == _counts(*files[:2])

    # no savepoint directory: the interrupt cancels, the job's checkpoint is retained
    plain = ("%%flink_sql --mode table --refresh-interval 0.2 --job-name checkpointed-counts "
             "{resume}\nSELECT word, COUNT(*) AS cnt FROM kernel_resume GROUP BY word")
    third = k.start(plain.format(resume=""))
    _wait_for_rows(k, third, _counts(*files[:2]))
    k.km.interrupt_kernel()
    k.finish(third, timeout=300)
    (source / "3.csv").write_text("".join(f"{w}\n" for w in files[2]))
    fourth = k.start(plain.format(resume="--resume"))  # 3.csv came while no job ran
    _wait_for_rows(k, fourth, _counts(*files))
    k.km.interrupt_kernel()
    k.finish(fourth, timeout=300)
    assert "resuming from the retained checkpoint" in fourth.stdout
    assert _final_rows(fourth) == _counts(*files)
    assert "CANCELED" in _sql_results(fourth)[-1]["text/html"], _sql_results(fourth)[-1]
    assert _job_statuses(k, "checkpointed-counts") == ["CANCELED", "CANCELED"]
    nothing = k.run("%%flink_sql --mode table --job-name never-ran --resume\n"
                    "SELECT word, COUNT(*) AS cnt FROM kernel_resume GROUP BY word",
                    allow_error=True)
    assert "nothing to resume from" in str(nothing.messages)
    assert _job_statuses(k, "never-ran") == []  # no silent fresh start

    detached = k.run("%%flink_sql --mode append --detach --job-name detached-words\n"
                     "SELECT word FROM kernel_resume")
    assert "runs detached" in detached.stdout
    assert _job_statuses(k, "detached-words") == ["RUNNING"]  # after its cell
    job_id = detached.stdout.split("Job ")[1].split()[0]
    k.run(f"%flink_session cancel {job_id}")
    k.run("%%flink_sql\nDROP TABLE kernel_resume")


def _lines(directory: Path) -> list[str]:
    """The rows a filesystem sink wrote into ``directory`` (its committed part files)."""
    return sorted(line for p in directory.rglob("*") if p.is_file()
                  and not p.name.startswith((".", "_")) for line in p.read_text().splitlines())


def _ended_jobs(cluster: Cluster, before: set[str]) -> list[Any]:
    """The session's jobs not in ``before``, once every one of them has ended."""
    deadline = time.monotonic() + 120
    while True:
        new = [j for j in Session(cluster.info).jobs() if j.job_id not in before]
        if all(j.status.is_globally_terminal for j in new) or time.monotonic() > deadline:
            return new
        time.sleep(0.1)


def test_flink_sql_run_as_one_runs_the_cells_inserts_as_one_job(cluster: Cluster,
                                                               tmp_path: Path) -> None:
    """``--run-as-one``: a cell's INSERTs are one job (a statement set) in BATCH and in
    STREAMING; without it each INSERT is a job of its own."""
    k = cluster.kernel
    source = tmp_path / "src"
    source.mkdir()
    (source / "w.csv").write_text("a\nb\na\n")
    k.run(f'''
        %%flink_sql
        CREATE TABLE one_src (word STRING) WITH ('connector' = 'filesystem',
            'path' = '{source}', 'format' = 'csv');
        CREATE TABLE one_a (word STRING) WITH ('connector' = 'filesystem',
            'path' = '{tmp_path / "a"}', 'format' = 'csv');
        CREATE TABLE one_b (word STRING) WITH ('connector' = 'filesystem',
            'path' = '{tmp_path / "b"}', 'format' = 'csv')
    ''')
    inserts = ("INSERT INTO one_a SELECT word FROM one_src;\n"
               "INSERT INTO one_b SELECT UPPER(word) FROM one_src")
    both = "default_catalog.default_database.one_a,default_catalog.default_database.one_b"
    for run, (mode, flag) in enumerate([("batch", "--run-as-one"), ("streaming", "--run-as-one"),
                                        ("batch", ""), ("streaming", "")], start=1):
        before = {j.job_id for j in Session(cluster.info).jobs()}
        k.run(f"%%flink_sql --runtime-mode {mode} {flag}\n{inserts}")
        new = _ended_jobs(cluster, before)
        names = sorted(j.name.removeprefix("insert-into_") for j in new)
        if flag:
            assert names == [both], (mode, names)
        else:
            assert names == sorted(both.split(",")), (mode, names)
        assert {j.status.value for j in new} == {"FINISHED"}
        assert _lines(tmp_path / "a") == sorted(["a", "b", "a"] * run)
        assert _lines(tmp_path / "b") == sorted(["A", "B", "A"] * run)
    k.run("%%flink_sql\nDROP TABLE one_src;\nDROP TABLE one_a;\nDROP TABLE one_b")


def test_flink_sql_table_created_in_one_kernel_is_queried_from_another(
        cluster: Cluster, tmp_path: Path) -> None:
    """One catalog per session: a table (and a view) created by a cell of one kernel is listed,
    queried and dropped by a cell of a second kernel connected to the same session."""
    k = cluster.kernel
    source = tmp_path / "shared"
    source.mkdir()
    (source / "p.csv").write_text("apple,3\npear,5\napple,4\n")
    k.run(f'''
        %%flink_sql
        CREATE TABLE shared_bids (item STRING, price INT) WITH ('connector' = 'filesystem',
            'path' = '{source}', 'format' = 'csv');
        CREATE VIEW shared_totals AS SELECT item, SUM(price) AS total FROM shared_bids
            GROUP BY item
    ''')
    other = Kernel(cluster.env)
    try:
        other.run("import json\n%load_ext sessioncluster")
        other.run(f"s2 = %flink_session connect {NAME}")
        listed = other.run("%%flink_sql --out tables\nSHOW TABLES\n").stdout
        got = other.run("print(json.dumps(sorted(tables.iloc[:, 0].tolist())))").json()
        assert "shared_bids" in got, listed
        other.run("%%flink_sql --out totals\nSELECT item, total FROM shared_totals")
        rows = other.run("print(json.dumps(sorted(map(list, totals.itertuples(index=False)))))")
        assert rows.json() == [["apple", 7], ["pear", 5]]
        other.run("%%flink_sql\nDROP VIEW shared_totals;\nDROP TABLE shared_bids")
    finally:
        other.shutdown()
    k.run("%%flink_sql --out tables\nSHOW TABLES")
    assert "shared_bids" not in k.run("print(json.dumps(tables.iloc[:, 0].tolist()))").json()


def test_kernel_restart_keeps_the_session_and_connect_reattaches(cluster: Cluster,
                                                                 tmp_path: Path) -> None:
    """A STREAMING job started with execute_async outlives the kernel; after a restart,
    ``%flink_session connect`` re-attaches to the session, the job is listed RUNNING, and a
    JobClient by its id follows it (here: to its cancel)."""
    k = cluster.kernel
    watched = tmp_path / "watched"
    watched.mkdir()
    job_id = k.run(f'''
        from sessioncluster.pyflink.common import Duration, Types, WatermarkStrategy
        from sessioncluster.pyflink.datastream import RuntimeExecutionMode
        from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat
        senv = session.get_execution_environment()
        senv.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        senv.set_parallelism(1)
        source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), {str(watched)!r})
                  .monitor_continuously(Duration.of_millis(200)).build())
        (senv.from_source(source, WatermarkStrategy.no_watermarks(), "lines")
             .map(str.upper, output_type=Types.STRING()).print())
        streaming = senv.execute_async("streaming upper")
        wait_until(lambda: streaming.get_job_status().name == "RUNNING", 120)
        print(json.dumps(streaming.get_job_id()))
    ''', timeout=180).json()
    before = Session(cluster.info).jobs()
    k.restart()
    # the session's processes outlive the kernel: its JobManager, its Spark driver (in local
    # mode, the TaskManager's JVM) and a registered TaskManager. (Spark may restart a Python
    # daemon of its own accord, so an agent's pid is not the session's life.)
    overview = Session(cluster.info).status()
    jvms = {tm.jvm_pid for tm in overview.taskmanagers}
    assert pid_alive(cluster.info.jobmanager_pid) and jvms and all(pid_alive(p) for p in jvms)
    assert [tm.state for tm in overview.taskmanagers] == ["REGISTERED"], overview.taskmanagers
    k.run(SETUP)
    k.run("%load_ext sessioncluster")
    got = k.run(f"session = %flink_session connect {NAME}\n"
                "print(json.dumps(session.info.jobmanager_pid))")
    assert got.json() == cluster.info.jobmanager_pid and got.widget_ids
    listed = k.run("%flink_session jobs").data()[0]["text/plain"]
    for job in before:
        assert job.job_id in listed
    assert "static html" in listed and "explode" in listed
    running = [line for line in listed.splitlines() if job_id in line]
    assert running and "RUNNING" in running[0], listed
    got = k.run(f'''
        streaming = session.job({job_id!r})
        status = streaming.get_job_status().name
        streaming.cancel()
        print(json.dumps([status, streaming.wait(60).status.name]))
    ''').json()
    assert got == ["RUNNING", "CANCELED"]
    out = k.run('''
        env = session.get_execution_environment()
        print(json.dumps(sorted(env.from_collection([1, 2, 3]).map(lambda x: x * 10).execute_and_collect())))
    ''').json()
    assert out == [10, 20, 30]


def test_stop_stops_the_session(cluster: Cluster) -> None:
    k = cluster.kernel
    k.run("shown = list(magics()._cluster_widgets)")
    out = k.run("%flink_session stop").stdout
    assert f"stopped session cluster '{NAME}'" in out and "gone" in out
    assert not pid_alive(cluster.info.jobmanager_pid)
    deadline = time.monotonic() + 60
    while any(pid_alive(p) for p in cluster.pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in cluster.pids if pid_alive(p)], "processes outlived stop"
    got = k.run('''
        wait_until(lambda: all(w.stopped.is_set() for w in shown))
        print(json.dumps([magics().session is None, len(magics()._cluster_widgets),
                          all(("stopped", True) in w.history for w in shown), len(shown)]))
    ''').json()
    assert got == [True, 0, True, 1]  # the connect after the kernel restart
    after = k.run("%flink_session status", allow_error=True)
    assert "no current session" in after.stderr + str(after.messages)
