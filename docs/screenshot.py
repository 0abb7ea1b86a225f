"""Regenerate ``docs/images/job-widget.png``: the live job widget as JupyterLab renders it.

Run it (40-60 s) with a Python that has sessioncluster and the documentation-only tools
``jupyterlab`` and ``playwright``, e.g. in a venv that sees the system's packages::

    python -m venv --system-site-packages /tmp/shotvenv
    /tmp/shotvenv/bin/pip install jupyterlab playwright
    /tmp/shotvenv/bin/python docs/screenshot.py [--out PNG] [--chromium /usr/bin/chromium]

It needs sessioncluster installed with its notebook extras (ipywidgets, jupyter_bokeh), Java 17,
and a Chromium or Chrome binary (``playwright install`` is not needed: the given one is used).

What it does: starts JupyterLab on 127.0.0.1 with a random token in a temporary directory (its
own Jupyter config, runtime and ``SESSIONCLUSTER_HOME``), writes a small notebook there (start a
session, run a word count with accumulators, stop the session), opens it in headless Chromium,
runs the cells up to the job, waits for the job widget to show FINISHED with its Bokeh DAG drawn,
expands its subtasks, screenshots the job's cell and output, runs the last cell
(``session.stop()``), and stops JupyterLab. The ``finally`` blocks stop the session and the
server even when a step fails, so no process is left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parents[1]
SESSION = "shot"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

CELLS = [
    "%load_ext sessioncluster",
    f"session = %flink_session start --name {SESSION} --taskmanagers 2 --slots 1",
    """\
from sessioncluster import FlatMapFunction, Histogram, IntCounter

TEXT = ["To be, or not to be, that is the question:",
        "Whether 'tis nobler in the mind to suffer",
        "The slings and arrows of outrageous fortune,",
        "Or to take arms against a sea of troubles"]

class Tokenize(FlatMapFunction):
    def open(self, runtime_context):
        self.words, self.lengths = IntCounter(), Histogram()
        runtime_context.add_accumulator("words", self.words)
        runtime_context.add_accumulator("word length", self.lengths)

    def flat_map(self, line):
        for word in line.lower().replace(",", " ").replace(":", " ").split():
            self.words.add(1)
            self.lengths.add(len(word))
            yield word

env = session.get_execution_environment()
env.set_parallelism(2)
counts = (env.from_collection(TEXT).flat_map(Tokenize()).map(lambda w: (w, 1))
             .key_by(lambda t: t[0]).sum(1).execute_and_collect("word count"))
sorted(counts, key=lambda t: -t[1])[:4]""",
    "session.stop()",
]


def notebook(cells: list[str]) -> dict[str, object]:
    """A minimal nbformat 4 notebook with these code cells and the python3 kernel."""
    return {
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"cell-{i}",
                   "metadata": {}, "outputs": [], "source": src} for i, src in enumerate(cells)],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(root: Path, port: int, token: str) -> subprocess.Popen[bytes]:
    """JupyterLab in ``root`` with its own config and runtime dirs; returns once it answers."""
    config = root / ".jupyter"
    # no "news" notification in the corner of the screenshot
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    # the lab extensions of ipywidgets and jupyter_bokeh, also when they are installed in the
    # base Python of a --system-site-packages venv (Jupyter only looks in sys.prefix by default)
    data = dict.fromkeys(str(Path(p, "share", "jupyter")) for p in (sys.prefix, sys.base_prefix))
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_PATH": os.pathsep.join(data),
           "JUPYTER_RUNTIME_DIR": str(root / ".runtime"), "IPYTHONDIR": str(root / ".ipython"),
           "SESSIONCLUSTER_HOME": str(root / ".sessioncluster"),
           # the job widget loads BokehJS from the CDN by default; this machine may be offline
           "BOKEH_RESOURCES": "inline"}
    with open(root / "lab.log", "wb") as log:
        lab = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
             "--LabApp.expose_app_in_browser=True", f"--LabApp.workspaces_dir={root / '.ws'}",
             *(["--allow-root"] if os.geteuid() == 0 else [])],
            env=env, cwd=root, start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}",
                                        timeout=2):
                return lab
        except OSError:
            if lab.poll() is not None:
                log_text = (root / "lab.log").read_text()
                raise RuntimeError(f"JupyterLab exited:\n{log_text}") from None
            time.sleep(0.5)
    raise RuntimeError("JupyterLab did not answer in 60 s")


def stop_lab(lab: subprocess.Popen[bytes], port: int, token: str) -> None:
    """Shut the server down (it shuts its kernels down first); kill it if it does not go."""
    try:
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}/api/shutdown?token={token}", method="POST"), timeout=10)
        lab.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        os.killpg(lab.pid, signal.SIGKILL)
        lab.wait()


def stop_session(root: Path) -> None:
    """Stop the notebook's session cluster if it is still running (a failed run)."""
    if (root / ".sessioncluster" / "sessions" / SESSION / "connection.json").exists():
        subprocess.run([sys.executable, "-m", "sessioncluster", "stop", SESSION], check=False,
                       env={**os.environ, "SESSIONCLUSTER_HOME": str(root / ".sessioncluster")})


def run(page: Page, command: str) -> None:
    """Run a JupyterLab command (the app is exposed as ``window.jupyterapp``)."""
    page.evaluate("cmd => window.jupyterapp.commands.execute(cmd)", command)


def wait_idle(page: Page, timeout_s: float = 120) -> None:
    """Wait until the open notebook's kernel is idle."""
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status"
        " === 'idle'", timeout=timeout_s * 1000)


def open_notebook(browser: Any, url: str, width: int, height: int) -> tuple[Page, Any]:
    """A page of the notebook at ``url``, its kernel idle, the file browser closed and its last
    cell (``session.stop()``) selected; and the notebook's cells."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.last.wait_for(timeout=60_000)
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # the file browser
    wait_idle(page)
    cells.last.click()
    return page, cells


def screenshot(url: str, out: Path, chromium: str) -> None:
    """Open the notebook at ``url``, run it and save the job's cell and output to ``out``."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page, cells = open_notebook(browser, url, 1280, 1800)
            run(page, "notebook:run-all-above")
            job = cells.nth(2)
            job.locator(".widget-vbox", has_text="FINISHED").wait_for(timeout=180_000)
            job.locator("canvas").first.wait_for(timeout=30_000)  # the Bokeh DAG
            job.get_by_text("final value").wait_for(timeout=30_000)  # final accumulators
            wait_idle(page)
            job.get_by_text("Subtasks", exact=True).click()
            cells.first.click()                      # no active cell next to the job's
            run(page, "notebook:enter-command-mode")
            page.mouse.move(0, 0)
            page.wait_for_timeout(1500)              # last Bokeh patches, the accordion opening
            out.parent.mkdir(parents=True, exist_ok=True)
            job.screenshot(path=str(out))
            cells.last.click()
            run(page, "notebook:run-cell")           # session.stop()
            cells.last.locator(".jp-InputPrompt", has_text=re.compile(r"\[\d+\]")).wait_for(
                timeout=90_000)
        finally:
            browser.close()


def take(name: str, cells: list[str], out: Path, chromium: str,
         shoot: Callable[[str, Path, str], None]) -> None:
    """A notebook ``name`` of ``cells`` opened in a JupyterLab of its own, ``shoot`` (url, out,
    chromium) taking the picture; the lab and the notebook's session stopped after."""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sc-shot-") as tmp:
        root = Path(tmp)
        (root / f"{name}.ipynb").write_text(json.dumps(notebook(cells), indent=1))
        port, token = free_port(), secrets.token_hex(16)
        lab = start_lab(root, port, token)
        try:
            shoot(f"http://127.0.0.1:{port}/lab/tree/{name}.ipynb?reset&token={token}",
                  out.resolve(), chromium)
        except Exception:
            print((root / "lab.log").read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            stop_lab(lab, port, token)
            stop_session(root)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB) in {time.monotonic() - t0:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "job-widget.png")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    take("job-widget", CELLS, args.out, args.chromium, screenshot)


if __name__ == "__main__":
    main()
