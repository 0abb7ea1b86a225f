"""Jupyter: the ``%flink_session`` / ``%%flink_sql`` magics and the live job and cluster widgets.

>>> %load_ext sessioncluster                               # doctest: +SKIP
>>> session = %flink_session start --name dev              # doctest: +SKIP

ipywidgets and Bokeh are imported only when a widget is made, so ``import sessioncluster``
stays light outside notebooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client.jobclient import JobClient
    from ..client.session import Session
    from .widgets import ClusterWidget, JobWidget


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


__all__ = ["cluster_widget", "display_job_widget", "job_widget"]
