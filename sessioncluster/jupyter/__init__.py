"""Jupyter: the %flink_session magics and the live job and cluster widgets."""

from typing import Any


def display_job_widget(client: Any) -> None:
    """Display the live job widget of ``client`` (a JobClient) in the current notebook."""
    raise NotImplementedError("the job widget is being built")
