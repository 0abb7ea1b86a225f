"""The JupyterLab extension (``extension/``): its server extension in a real jupyter_server under
a base URL, with the shared session behind it; and the sidebar in a real JupyterLab, driven in
Debian's chromium by playwright.

``SESSIONCLUSTER_SCREENSHOTS=1`` also saves ``docs/images/jupyterlab-sidebar.png``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster.cluster.connection import ConnectionInfo, free_port

from .test_dashboard import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, slowly

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"
INSTALLED = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "sessioncluster-jupyterlab"
TOKEN = "jupyter-test-token"
BASE = "/base/"
SCREENSHOT = ROOT / "docs" / "images" / "jupyterlab-sidebar.png"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect (to Jupyter's login page) is the answer


OPENER = urllib.request.build_opener(_NoRedirect)


class Jupyter:
    """A jupyter_server (or JupyterLab) process with the server extension enabled."""

    def __init__(self, app: str, home: Path, tmp: Path) -> None:
        pytest.importorskip("jupyter_server", reason="jupyter_server (the test extra)")
        self.port = free_port()
        self.root = tmp
        self.url = f"http://127.0.0.1:{self.port}{BASE}"
        env = {**os.environ, "SESSIONCLUSTER_HOME": str(home), "JUPYTER_CONFIG_DIR": str(tmp / "config"),
               "BOKEH_RESOURCES": "inline",  # a kernel's job widget: this machine may be offline
               "PYTHONPATH": os.pathsep.join(filter(None, [str(EXTENSION), os.environ.get("PYTHONPATH")]))}
        args = [sys.executable, "-m", app, "--no-browser", f"--port={self.port}", "--ip=127.0.0.1",
                f"--ServerApp.base_url={BASE}", f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={tmp}", "--ServerApp.jpserver_extensions="
                "{'sessioncluster_jupyterlab': True}"]
        if app == "jupyterlab":  # window.jupyterapp, for the tests that run a notebook's cells
            args.append("--LabApp.expose_app_in_browser=True")
        if os.geteuid() == 0:  # CI machines run as root
            args.append("--allow-root")
        self.log = open(tmp / f"{app}.log", "wb")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=tmp)
        deadline = time.monotonic() + 120
        while True:
            assert self.proc.poll() is None, (tmp / f"{app}.log").read_text()[-3000:]
            try:
                if self.call("api/status")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Jupyter did not start"
            time.sleep(0.3)

    def call(self, path: str, method: str = "GET", token: str | None = TOKEN) -> tuple[int, Any]:
        req = urllib.request.Request(self.url + path, method=method,
                                     data=b"" if method in ("PATCH", "POST") else None)
        if token:
            req.add_header("Authorization", f"token {token}")
        try:
            with OPENER.open(req, timeout=60) as resp:
                status, body, ctype = resp.status, resp.read(), resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as err:
            status, body, ctype = err.code, err.read(), err.headers.get("Content-Type", "")
        return status, json.loads(body) if "json" in ctype and body else body.decode(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def server(session: sessioncluster.Session, sc_home: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jupyter]:
    j = Jupyter("jupyter_server", sc_home, tmp_path_factory.mktemp("jupyter-server"))
    try:
        yield j
    finally:
        j.stop()


@pytest.fixture(scope="module")
def finished(session: sessioncluster.Session) -> str:
    env = session.get_execution_environment()
    client = env.from_collection([1, 2, 3]).map(lambda x: x + 1).execute_and_collect_async("labext done")
    assert sorted(client.collect()) == [2, 3, 4]
    return client.get_job_id()


def test_the_sessions_with_their_taskmanagers_and_jobs(session: sessioncluster.Session,
                                                       server: Jupyter, finished: str) -> None:
    status, body = server.call("sessioncluster/api/sessions")
    assert status == 200
    (row,) = [s for s in body["sessions"] if s["name"] == session.info.name]
    assert row["alive"] and row["error"] is None
    assert {tm["id"] for tm in row["taskmanagers"]} == {tm.tm_id for tm in session.status().taskmanagers}
    assert all(tm["slots"] >= 1 and 0 <= tm["heartbeatAgo"] < 30 for tm in row["taskmanagers"])
    job = next(j for j in row["jobs"] if j["jid"] == finished)
    assert (job["name"], job["state"], job["finished"]) == ("labext done", "FINISHED", job["total"])
    assert session.rest_token not in json.dumps(body) and session.info.key not in json.dumps(body)


def test_the_proxy_adds_the_token_and_serves_the_dashboard(session: sessioncluster.Session,
                                                           server: Jupyter, finished: str) -> None:
    name = session.info.name
    status, body = server.call(f"sessioncluster/proxy/{name}/jobs/{finished}")
    assert status == 200 and body["state"] == "FINISHED" and body["name"] == "labext done"
    status, page = server.call(f"sessioncluster/proxy/{name}/")
    assert status == 200 and "web/app.js" in page
    assert server.call(f"sessioncluster/proxy/{name}/web/app.js")[0] == 200
    status, body = server.call(f"sessioncluster/proxy/{name}/jobs/{'0' * 32}")
    assert status == 404 and body["errors"]  # the JobManager's own answer, passed on


def test_without_jupyters_token_nothing(session: sessioncluster.Session, server: Jupyter) -> None:
    for path in ("sessioncluster/api/sessions", f"sessioncluster/proxy/{session.info.name}/jobs"):
        status, body = server.call(path, token=None)
        assert status in (302, 403), (path, status)
        assert "jobs" not in str(body)
    status, _ = server.call(f"sessioncluster/proxy/{session.info.name}/jobs", token="wrong")
    assert status in (302, 403)


@pytest.mark.parametrize("path", ["..%2F..%2Fapi%2Fstatus", "jobs%2F..%2F..", "http:%2F%2Fevil/x",
                                  "%2Fetc%2Fpasswd"])
def test_paths_outside_the_rest_api_are_refused(session: sessioncluster.Session, server: Jupyter,
                                                path: str) -> None:
    status, body = server.call(f"sessioncluster/proxy/{session.info.name}/{path}")
    assert status == 400 and "not a path" in body["errors"][0]


def test_cancel_through_the_proxy(session: sessioncluster.Session, server: Jupyter) -> None:
    env = session.get_execution_environment()
    client = env.from_collection(list(range(400))).map(slowly).execute_and_collect_async("labext cancel")
    url = f"sessioncluster/proxy/{session.info.name}/jobs/{client.get_job_id()}?mode=cancel"
    assert server.call(url, "PATCH") == (202, {})
    assert client.wait(60).status.value == "CANCELED"
    status, body = server.call(url, "PATCH")
    assert status == 409 and "already CANCELED" in body["errors"][0]


def test_a_session_whose_jobmanager_died(session: sessioncluster.Session, server: Jupyter,
                                         sc_home: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ghost = sc_home / "sessions" / "ghost"
    ghost.mkdir(parents=True)
    info = ConnectionInfo("ghost", "k" * 64, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2",
                          "tcp://127.0.0.1:3", dead.pid, rest=f"http://127.0.0.1:{free_port()}")
    info.write(ghost / "connection.json")
    try:
        status, body = server.call("sessioncluster/api/sessions")
        (row,) = [s for s in body["sessions"] if s["name"] == "ghost"]
        assert not row["alive"] and "not running" in row["error"]
        status, body = server.call("sessioncluster/proxy/ghost/jobs/overview")
        assert status == 503 and body == {"errors": ["session ghost: JobManager is not running"]}
        assert server.call("sessioncluster/proxy/nosuch/jobs")[0] == 404
    finally:
        shutil.rmtree(ghost)


# -- the sidebar in a real JupyterLab ---------------------------------------------------------


@pytest.fixture(scope="module")
def lab(session: sessioncluster.Session, sc_home: Path,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jupyter]:
    if not INSTALLED.is_dir():
        pytest.fail(f"the extension's frontend is not installed ({INSTALLED}): run .ci/install")
    pytest.importorskip("jupyterlab", reason="JupyterLab (the test extra)")
    j = Jupyter("jupyterlab", sc_home, tmp_path_factory.mktemp("jupyterlab"))
    try:
        yield j
    finally:
        j.stop()


@contextmanager
def lab_page(url: str) -> Iterator[Any]:
    """A page of Debian's chromium (driven by playwright) at ``url``; the browser closes after."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            yield page
        finally:
            browser.close()


def test_the_sidebar_lists_the_session_opens_a_job_and_cancels_one(
        session: sessioncluster.Session, lab: Jupyter) -> None:
    env = session.get_execution_environment()
    env.set_parallelism(2)
    done = env.from_collection(list(range(24))).map(slowly).execute_and_collect_async("sidebar job")
    with lab_page(f"{lab.url}lab?token={TOKEN}") as page:
        page.locator("[data-id='sessioncluster-sessions']").first.click()
        box = page.locator(f".sc-session[data-session='{session.info.name}']")
        box.wait_for()
        assert box.locator(".sc-taskmanager").count() == len(session.status().taskmanagers)
        job = box.locator(f".sc-job[data-job='{done.get_job_id()}']")
        job.locator(".sc-open").click()
        frame = page.frame_locator(f"#sessioncluster-job-{done.get_job_id()} iframe")
        frame.locator(".jobhead .state[data-state='FINISHED']").wait_for()
        assert frame.locator("h1").inner_text() == "sidebar job"
        assert frame.locator("#jobgraph g.vertex").count() == len(done.details().job_graph.vertices)
        job.locator(".sc-state[data-state='FINISHED']").wait_for()
        if os.environ.get("SESSIONCLUSTER_SCREENSHOTS") == "1":
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
        running = env.from_collection(list(range(400))).map(slowly).execute_and_collect_async("cancel me")
        row = box.locator(f".sc-job[data-job='{running.get_job_id()}']")
        row.locator(".sc-cancel").click()
        assert running.wait(60).status.value == "CANCELED"
        row.locator(".sc-state[data-state='CANCELED']").wait_for()


def test_the_sidebar_lists_the_sessions_tables(session: sessioncluster.Session, lab: Jupyter,
                                               tmp_path: Path) -> None:
    session.execute_sql(f"""CREATE TABLE side_words (word STRING) WITH ('connector' =
        'filesystem', 'path' = '{tmp_path}', 'format' = 'csv')""")
    try:
        with lab_page(f"{lab.url}lab?token={TOKEN}") as page:
            page.locator("[data-id='sessioncluster-sessions']").first.click()
            box = page.locator(f".sc-session[data-session='{session.info.name}']")
            row = box.locator(".sc-table[data-table='side_words']")
            row.wait_for()
            assert row.get_attribute("data-kind") == "TABLE"
            assert row.locator(".sc-kind").inner_text() == "table"
            listed = set(session.execute_sql("SHOW TABLES").table.column(0).to_pylist())
            assert box.locator(".sc-table").count() >= len(listed)
            session.execute_sql("DROP TABLE side_words")
            row.wait_for(state="detached")  # the sidebar refreshes as the jobs list does
    finally:
        session.execute_sql("DROP TABLE IF EXISTS side_words")


def test_a_live_table_cell_changes_while_its_job_runs(session: sessioncluster.Session, lab: Jupyter,
                                                     tmp_path: Path) -> None:
    """A ``%%flink_sql --mode table`` cell in JupyterLab, in chromium: while its streaming job runs,
    the table in the cell's output follows each click file the test drops into the monitored
    directory (Flink's counts, compared with plain Python's after each file), and interrupting
    the kernel cancels the job."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat (with JupyterLab)")
    clicks, table = tmp_path / "clicks", f"live_clicks_{uuid.uuid4().hex[:8]}"
    clicks.mkdir()
    files = [[("Mary", "./home"), ("Bob", "./cart")],
             [("Mary", "./prod?id=1"), ("Liz", "./home"), ("Mary", "./prod?id=7")],
             [("Bob", "./prod?id=3"), ("Ann", "./home")]]
    cells = ["%load_ext sessioncluster",
             f"session = %flink_session connect {session.info.name}",
             f"%%flink_sql\nCREATE TABLE {table} (name STRING, url STRING) WITH ('connector' = "
             f"'filesystem', 'path' = '{clicks}', 'format' = 'csv', 'source.monitor-interval' = '1s')",
             f"%%flink_sql --mode table --refresh-interval 0.5\n"
             f"SELECT name, COUNT(url) AS clicks FROM {table} GROUP BY name"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / "live.ipynb")
    known = {j.job_id for j in session.jobs()}
    expected: Counter[str] = Counter()
    try:
        with lab_page(f"{lab.url}lab/tree/live.ipynb?token={TOKEN}") as page:
            page.locator(".jp-Notebook .jp-Cell").nth(len(cells) - 1).wait_for()
            _wait_kernel_idle(page)
            _lab_command(page, "notebook:run-all-cells")  # the query's cell runs until interrupted
            for i, rows in enumerate(files):
                _drop_csv(clicks, i, rows)
                expected.update(name for name, _ in rows)
                shown = _wait_for_table(page, len(cells) - 1, dict(expected))
                assert shown == {k: str(v) for k, v in expected.items()}, (i, shown)
            new = [j for j in session.jobs() if j.job_id not in known]
            running = [j for j in new if j.status.value == "RUNNING"]
            assert len(running) == 1, [(j.name, j.status.value) for j in new]
            job = running[0]
            _lab_command(page, "notebook:interrupt-kernel")
            query = page.locator(".jp-Notebook .jp-Cell").nth(len(cells) - 1)
            query.locator(".sc-sql-result", has_text="CANCELED").wait_for()
            assert session.job(job.job_id).wait(60).status.value == "CANCELED"
            _wait_kernel_idle(page)
    finally:
        session.execute_sql(f"DROP TABLE IF EXISTS {table}")


def _drop_csv(directory: Path, index: int, rows: list[tuple[str, str]]) -> None:
    """A new file in the monitored directory, complete when it appears (written, then renamed)."""
    part = directory / f".{index}.csv.inprogress"
    part.write_text("".join(f"{name},{url}\n" for name, url in rows))
    part.rename(directory / f"{index}.csv")


def _lab_command(page: Any, command: str) -> None:
    """Start a JupyterLab command without waiting for its promise (a running cell's never ends)."""
    page.evaluate("cmd => { window.jupyterapp.commands.execute(cmd); }", command)


def _wait_kernel_idle(page: Any) -> None:
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget?.sessionContext?.session"
                           "?.kernel?.status === 'idle'", timeout=120_000)


def _wait_for_table(page: Any, cell: int, expected: dict[str, int]) -> dict[str, str]:
    """The live table of cell ``cell`` once it shows ``expected``'s names and counts while the job
    is RUNNING; what it shows if that does not happen within the timeout."""
    script = """([cell, expected]) => {
        const out = document.querySelectorAll('.jp-Notebook .jp-Cell')[cell];
        const result = out && out.querySelector('.sc-sql-result');
        if (!result || !result.textContent.includes('RUNNING')) return false;
        const shown = {};
        for (const r of result.querySelectorAll('tbody tr'))
          shown[r.cells[0].textContent] = r.cells[1].textContent;
        const want = Object.entries(expected);
        return want.length === Object.keys(shown).length && want.every(([k, v]) => shown[k] === String(v));
      }"""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(script, arg=[cell, expected], timeout=120_000)
    except PlaywrightTimeout:  # the caller's assertion says what the table showed instead
        pass
    return page.evaluate("""cell => {
        const cells = document.querySelectorAll('.jp-Notebook .jp-Cell');
        const result = cells[cell].querySelector('.sc-sql-result');
        const shown = {};
        for (const r of (result ? result.querySelectorAll('tbody tr') : []))
          shown[r.cells[0].textContent] = r.cells[1].textContent;
        return shown;
      }""", cell)
