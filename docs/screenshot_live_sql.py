"""Regenerate ``docs/images/live-sql.png``: a ``%%flink_sql --mode table`` cell in JupyterLab
whose table changes while its streaming job runs, its job widget above it.

Run it (1-2 min) as ``docs/screenshot.py`` is run, with the same tools::

    /tmp/shotvenv/bin/python docs/screenshot_live_sql.py [--out PNG] [--chromium /usr/bin/chromium]

What it does: starts JupyterLab as ``docs/screenshot.py`` does (its ``start_lab``), writes a
notebook that starts a session, creates a table over a directory that a thread of the kernel
keeps adding click files to (``'source.monitor-interval'``), and counts clicks per user with
``%%flink_sql --mode table``. It runs the cells, waits until the live table shows every user
while the job is RUNNING, screenshots the cell, then interrupts the kernel (which cancels the
job), waits for the CANCELED table and stops the session. The ``finally`` blocks stop the session
and the server even when a step fails.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from playwright.sync_api import Page, sync_playwright
from screenshot import CHROMIUM_ARGS, REPO, SESSION, open_notebook, run, take, wait_idle

USERS = ["Mary", "Bob", "Liz", "Ann", "Tom"]
CELLS = [
    "%load_ext sessioncluster",
    f"session = %flink_session start --name {SESSION} --taskmanagers 0 --slots 2",
    f"""\
import pathlib, random, tempfile, threading, time

clicks_dir = pathlib.Path(tempfile.mkdtemp(prefix="clicks-"))

def click_files(n=200, seconds=1.5):
    \"\"\"A few clicks (user, url) in a new file every 1.5 s, as a log shipper would.\"\"\"
    rng = random.Random(7)
    for i in range(n):
        rows = [f"{{rng.choice({USERS!r})}},./page{{rng.randint(1, 9)}}\\n"
                for _ in range(rng.randint(2, 6))]
        (clicks_dir / f".{{i}}.csv").write_text("".join(rows))
        (clicks_dir / f".{{i}}.csv").rename(clicks_dir / f"{{i}}.csv")
        time.sleep(seconds)

threading.Thread(target=click_files, daemon=True).start()""",
    """\
%%flink_sql
CREATE TABLE clicks (name STRING, url STRING) WITH (
  'connector' = 'filesystem', 'path' = '{clicks_dir}', 'format' = 'csv',
  'source.monitor-interval' = '1s')""",
    """\
%%flink_sql --mode table --refresh-interval 0.5
SELECT name, COUNT(url) AS clicks, MAX(url) AS last_page FROM clicks GROUP BY name""",
    "session.stop()",
]
QUERY_CELL = 4


def screenshot(url: str, out: Path, chromium: str) -> None:
    """Open the notebook at ``url``, run it and save the live query's cell to ``out``."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page, cells = open_notebook(browser, url, 1100, 1400)
            start(page, "notebook:run-all-above")   # its promise waits for the query: never
            query = cells.nth(QUERY_CELL)
            wait_for_users(page)
            page.wait_for_timeout(2000)              # the job widget's DAG drawn
            cells.first.click()                      # no active cell next to the query's
            run(page, "notebook:enter-command-mode")
            page.mouse.move(0, 0)
            wait_for_users(page)                     # a fresh update, still RUNNING
            shot = query.screenshot()
            start(page, "notebook:interrupt-kernel")            # cancels the job
            query.locator(".sc-sql-result", has_text="CANCELED").wait_for(timeout=120_000)
            wait_idle(page)
            cells.last.click()
            run(page, "notebook:run-cell")           # session.stop()
            wait_idle(page)
        finally:
            browser.close()
    save_small(shot, out)


def start(page: Page, command: str) -> None:
    """Start a JupyterLab command without waiting for it to end."""
    page.evaluate("cmd => { window.jupyterapp.commands.execute(cmd); }", command)


def wait_for_users(page: Page) -> None:
    """Until the live table shows a row for every user, with the job RUNNING."""
    page.wait_for_function(
        """users => {
             const out = [...document.querySelectorAll('.jp-Notebook .jp-Cell')][%d];
             const result = out && out.querySelector('.sc-sql-result');
             if (!result || !result.textContent.includes('RUNNING')) return false;
             const names = [...result.querySelectorAll('tbody tr')].map(r => r.cells[0].textContent);
             return users.every(u => names.includes(u));
           }""" % QUERY_CELL, arg=USERS, timeout=240_000)


def save_small(png: bytes, out: Path) -> None:
    """The screenshot as a PNG of at most 256 colours (a few tens of KB, not hundreds)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    out.parent.mkdir(parents=True, exist_ok=True)
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "live-sql.png")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    take("live-sql", CELLS, args.out, args.chromium, screenshot)


if __name__ == "__main__":
    main()
