"""Flink SQL on the web dashboard, in a real headless Chromium (Debian's ``chromium``, driven by
playwright) against the shared session: a streaming SELECT over a monitored directory shows its
result rows on its job page beside its graph, changing as files arrive, while a client reads the
same rows (the page takes none of them); the "Tables" view lists the session's catalog.

``SESSIONCLUSTER_SCREENSHOTS=1`` also saves ``docs/images/dashboard-sql.png``."""

from __future__ import annotations

import collections
import json
import os
import queue
import threading
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster.client.restclient import RestClient
from sessioncluster.client.sqlclient import SqlGatewayClient
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment

from .test_dashboard import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, browser  # noqa: F401 - a fixture

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_new_tables")]

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "images" / "dashboard-sql.png"
FILES = [["x", "y", "x"], ["x"], ["z", "y", "z", "x"]]



@pytest.fixture
def page(browser: Any) -> Iterator[Any]:  # noqa: F811 - the fixture imported above
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = context.new_page()
    p.set_default_timeout(TIMEOUT_MS)
    try:
        yield p
    finally:
        context.close()


def rest(session: sessioncluster.Session, path: str) -> Any:
    req = urllib.request.Request(session.rest_url + path,
                                 headers={"Authorization": f"Bearer {session.rest_token}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def shown_rows(page: Any, selector: str) -> list[list[str]]:
    """The cells of each row of a table on the page."""
    return page.eval_on_selector_all(
        f"{selector} tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")


def wait_for_rows(page: Any, selector: str, expected: list[list[str]]) -> None:
    """Until the table's rows, in any order, are ``expected`` (the page refreshes each second)."""
    page.wait_for_function(
        """([selector, expected]) => {
             const rows = [...document.querySelectorAll(selector + ' tbody tr')]
               .map(r => JSON.stringify([...r.cells].map(c => c.textContent))).sort();
             return JSON.stringify(rows) === JSON.stringify(expected.map(r => JSON.stringify(r)).sort());
           }""", arg=[selector, expected])


def test_a_streaming_selects_rows_change_on_its_job_page(session: sessioncluster.Session,
                                                         page: Any, tmp_path: Path) -> None:
    source = tmp_path / "words"
    source.mkdir()
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    t_env.execute_sql(f"""CREATE TABLE dash_words (word STRING) WITH ('connector' =
        'filesystem', 'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    result = t_env.execute_sql("SELECT word, COUNT(*) AS cnt FROM dash_words GROUP BY word")
    job_id = result.get_job_client().get_job_id()
    got: queue.Queue[Any] = queue.Queue()
    iterator = result.collect()  # a client reading the rows as the page shows them
    reader = threading.Thread(target=lambda: [got.put(r) for r in iterator], daemon=True)
    reader.start()

    page.goto(session.dashboard_url)
    page.goto(f"{session.rest_url}/#/jobs/{job_id}")
    page.locator("#sql-result").wait_for()
    assert page.locator(".beside #jobgraph").count() == 1  # the result is beside the graph
    assert page.locator("#sql-summary").inner_text() == "0 rows, from 0 changes"
    counts: collections.Counter[str] = collections.Counter()
    changes = 0
    for k, words in enumerate(FILES):
        new = collections.Counter(words)
        changes += sum(2 if counts[w] else 1 for w in new)  # +I, or -U and +U
        counts.update(new)
        tmp = source / f".f{k}.csv"
        tmp.write_text("".join(f"{w}\n" for w in words))
        tmp.rename(source / f"f{k}.csv")  # one file: one micro-batch
        wait_for_rows(page, "#sql-table", [[w, str(n)] for w, n in counts.items()])
        assert page.locator("#sql-result").get_attribute("data-total") == str(changes)
    kinds = page.eval_on_selector_all("#sql-changelog tbody tr", "rs => rs.map(r => r.dataset.kind)")
    assert collections.Counter(kinds) == {"+I": 3, "-U": 3, "+U": 3}
    body = rest(session, f"/jobs/{job_id}/sql-result?limit=4")
    assert body["columns"] == [{"name": "word", "type": "STRING"},
                               {"name": "cnt", "type": "BIGINT NOT NULL"}]  # Flink's COUNT(*)
    assert body["total"] == changes and len(body["rows"]) == 4 and body["status"] == "RUNNING"
    assert {"kind": "+U", "fields": ["x", counts["x"]]} in body["rows"]
    # the page read the rows all along, and the client still gets every change, in order
    rows = [got.get(timeout=60) for _ in range(changes)]
    assert collections.Counter(r[0] for r in rows if r.get_row_kind().short_string() != "-U") \
        == {"x": 3, "y": 2, "z": 1}
    assert max(r[1] for r in rows if r[0] == "x") == counts["x"]
    if os.environ.get("SESSIONCLUSTER_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
    iterator.close()  # cancels the job
    page.wait_for_selector(".jobhead .state[data-state='CANCELED']")
    assert session.job(job_id).get_job_status() is JobStatus.CANCELED
    wait_for_rows(page, "#sql-table", [[w, str(n)] for w, n in counts.items()])  # still shown


def test_the_tables_view_lists_the_sessions_catalog(session: sessioncluster.Session, page: Any,
                                                    tmp_path: Path) -> None:
    session.execute_sql(f"""CREATE TABLE dash_orders (id BIGINT, amount DOUBLE) WITH (
        'connector' = 'filesystem', 'path' = '{tmp_path}', 'format' = 'csv')""")
    session.execute_sql("CREATE VIEW dash_big AS SELECT id FROM dash_orders WHERE amount > 10")
    listed = {t["name"]: t["kind"] for t in rest(session, "/sql/tables")["tables"]}
    assert listed["dash_orders"] == "TABLE" and listed["dash_big"] == "VIEW"
    page.goto(session.dashboard_url)
    page.locator("header nav a[data-page='tables']").click()
    page.locator("#sql-tables").wait_for()
    shown = {name: kind for name, kind in shown_rows(page, "#sql-tables")}
    assert shown == listed
    session.execute_sql("DROP VIEW dash_big")
    page.wait_for_function("!document.querySelector('#sql-tables').innerText.includes('dash_big')")
    assert "dash_orders" in page.locator("#sql-tables").inner_text()


def test_the_tables_view_shows_the_sql_gateway_s_clients(session: sessioncluster.Session,
                                                         page: Any) -> None:
    """A client of the SQL Gateway endpoint (``sessioncluster sql-client``) and what it ran:
    listed by ``/sql/gateway`` and on the Tables page, a statement's row opening its job."""
    client = SqlGatewayClient(RestClient.of(session), {"execution.runtime-mode": "batch"})
    try:
        op = client.submit("SELECT 6 * 7 AS answer")
        assert [fields for _, fields in client.result(op, "JSON").rows] == [[42]]
        listed = [s for s in rest(session, "/sql/gateway")["sessions"]
                  if s["sessionHandle"] == client.handle]
        assert len(listed) == 1 and listed[0]["sessionName"] == "sql-client"
        (shown_op,) = listed[0]["operations"]
        assert shown_op["operationHandle"] == op and shown_op["status"] == "FINISHED"
        job_id = shown_op["jobID"]
        assert session.job(job_id).get_job_status() is JobStatus.FINISHED
        page.goto(session.dashboard_url)
        page.locator("header nav a[data-page='tables']").click()
        page.locator("#sql-gateway").wait_for()
        assert ["sql-client", "SELECT 6 * 7 AS answer", "FINISHED", job_id] in \
            shown_rows(page, "#sql-gateway")
        page.locator("#sql-gateway tbody tr", has_text="SELECT 6 * 7").click()
        page.locator(".jobhead .state[data-state='FINISHED']").wait_for()
    finally:
        client.close()
    assert client.handle not in {s["sessionHandle"]
                                 for s in rest(session, "/sql/gateway")["sessions"]}
