"""Jupyter: the ``%flink_session`` / ``%%flink_sql`` magics and the live job and cluster widgets.

>>> %load_ext sessioncluster                               # doctest: +SKIP
>>> session = %flink_session start --name dev              # doctest: +SKIP

ipywidgets and Bokeh are imported only when a widget is made, so ``import sessioncluster``
stays light outside notebooks.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client.jobclient import JobClient
    from ..client.session import Session
    from .widgets import ClusterWidget, JobWidget

#: how long a cell that waited for a job waits, once the job ended, for the final snapshot of
#: the job's widgets that were shown
FINAL_SNAPSHOT_SECONDS = 10.0


def job_widget(client: "JobClient") -> "JobWidget":
    """The live widget of a job (not displayed yet: make it a cell's value or ``display`` it)."""
    from .widgets import JobWidget

    return JobWidget(client)


def display_job_widget(client: "JobClient") -> "JobWidget":
    """Display the live job widget of ``client`` in the current notebook output and return it.

    Called for every attached job run inside a kernel, right after submission.
    """
    from IPython.display import display

    widget = job_widget(client)
    display(widget)
    return widget


def cluster_widget(session: "Session") -> "ClusterWidget":
    """The live widget of a session cluster (not displayed yet)."""
    from .widgets import ClusterWidget

    return ClusterWidget(session)


def in_kernel() -> bool:
    """True inside a Jupyter kernel (not plain IPython, not a script)."""
    import sys

    if "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _show_attached_job(client: "JobClient") -> None:
    """An attached job run inside a kernel shows its live job widget."""
    if in_kernel():
        display_job_widget(client)


def _job_ended(client: "JobClient") -> None:
    """A wait for a job returned (it ended): wait (briefly) until the job's shown widgets have
    published their final snapshot, so that the update goes out while this cell still runs
    (nbclient and nbval read only the running cell's messages)."""
    job = sys.modules.get("sessioncluster.jupyter.widgets.job")
    if job is None:
        return  # no widget was ever made
    for widget in job.shown_widgets(client.job_id):
        widget.stopped.wait(FINAL_SNAPSHOT_SECONDS)


def _register_hooks() -> None:
    """Fill the client's display hooks: the client itself never imports this package."""
    from ..client import display
    from ..client.jobclient import JobClient, JobExecutionResult
    from ..client.session import Session
    from .html import job_client_html, job_result_html, session_html

    display.hooks.html.update({Session: session_html, JobClient: job_client_html,
                               JobExecutionResult: job_result_html})
    display.hooks.job_widget = job_widget
    display.hooks.attached_job = _show_attached_job
    display.hooks.job_ended = _job_ended


_register_hooks()

__all__ = ["cluster_widget", "display_job_widget", "in_kernel", "job_widget"]
