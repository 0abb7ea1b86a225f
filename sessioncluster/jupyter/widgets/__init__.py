"""Live ipywidgets of a session cluster and of its jobs (Bokeh inside through jupyter_bokeh)."""

from .cluster import ClusterWidget
from .job import JobWidget

__all__ = ["ClusterWidget", "JobWidget"]
