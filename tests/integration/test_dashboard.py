"""The web dashboard in a real headless Chromium (Debian's ``chromium``, driven by playwright)
against the shared session: sign-in, the overview, a job page that follows its job live to
FINISHED, and the cancel button.

``SESSIONCLUSTER_SCREENSHOTS=1`` also saves ``docs/images/dashboard-job.png``."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: without the networking flags Chromium keeps calling Google's hosts, which this network refuses
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 90_000
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "images" / "dashboard-job.png"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra)")
    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is missing: .ci/install installs it (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    p = context.new_page()
    p.set_default_timeout(TIMEOUT_MS)
    try:
        yield p
    finally:
        context.close()


def slowly(x: int) -> int:
    time.sleep(0.25)
    return x * 2


def test_without_the_token_the_page_says_how_to_sign_in(session: sessioncluster.Session,
                                                        page: Any) -> None:
    page.goto(session.rest_url + "/")
    notice = page.locator("#unauthorized")
    notice.wait_for()
    assert "sessioncluster dashboard NAME" in notice.inner_text()
    wrong = page.goto(session.rest_url + "/?token=not-the-token")
    assert wrong is not None and wrong.status == 401


def test_overview_and_a_job_followed_live_to_finished(session: sessioncluster.Session,
                                                      page: Any) -> None:
    page.goto(session.dashboard_url)
    assert page.url == session.rest_url + "/", "the token leaves the address bar"
    cookies = page.context.cookies()
    assert [(c["httpOnly"], c["sameSite"]) for c in cookies] == [(True, "Strict")]
    cards = page.locator("#overview-cards")
    cards.wait_for()
    page.wait_for_function("document.querySelector('#overview-cards').innerText.includes('TaskManagers')")
    tms = len(session.status().taskmanagers)
    assert cards.locator(".card").first.locator(".value").inner_text() == str(tms)

    env = session.get_execution_environment()
    env.set_parallelism(2)
    client = (env.from_collection(list(range(40))).map(slowly).name("slowly")
              .key_by(lambda x: x % 3).reduce(lambda a, b: a + b)
              .execute_and_collect_async("dashboard live"))
    job_id = client.get_job_id()
    # the job shows up on the overview without a reload, and links to its page
    page.locator("tr.link:has-text('dashboard live')").first.click()
    page.wait_for_url(f"**/#/jobs/{job_id}")
    vertices = client.details().job_graph.vertices
    page.wait_for_function(
        f"document.querySelectorAll('#jobgraph g.vertex').length === {len(vertices)}")
    assert page.locator("#jobgraph path.edge").count() == sum(len(v.inputs) for v in vertices)
    assert page.locator("h1").inner_text() == "dashboard live"
    assert page.locator(".jobhead .state").inner_text() in ("CREATED", "INITIALIZING", "RUNNING",
                                                            "FINISHED")
    page.wait_for_selector(".jobhead .state[data-state='FINISHED']")
    assert sorted(client.collect()) == sorted(sum(2 * x for x in range(40) if 2 * x % 3 == k)
                                              for k in range(3))
    assert page.locator("#cancel").is_disabled()
    assert all(g.get_attribute("data-state") == "FINISHED"
               for g in page.locator("#jobgraph g.vertex").all())
    source = page.locator("#jobgraph g.vertex").first
    assert "out 40" in source.inner_html()
    subtasks = page.locator("table").nth(1).locator("tbody tr")
    assert subtasks.count() == sum(v.parallelism for v in vertices)
    if os.environ.get("SESSIONCLUSTER_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)


def test_the_cancel_button_cancels_a_running_job(session: sessioncluster.Session, page: Any) -> None:
    env = session.get_execution_environment()
    env.set_parallelism(2)
    client = env.from_collection(list(range(400))).map(slowly).execute_and_collect_async("to cancel")
    page.goto(session.dashboard_url)
    page.goto(f"{session.rest_url}/#/jobs/{client.get_job_id()}")
    page.wait_for_selector(".jobhead .state[data-state='RUNNING']")
    page.once("dialog", lambda d: d.dismiss())  # an error would open an alert
    page.locator("#cancel").click()
    page.wait_for_selector(".jobhead .state[data-state='CANCELED']")
    assert client.wait(60).status.value == "CANCELED"
