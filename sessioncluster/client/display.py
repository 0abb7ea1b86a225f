"""The client's hooks for a notebook front end. The client never imports Jupyter code:
``sessioncluster.jupyter`` fills these when it is imported (``import sessioncluster`` does so
inside IPython, and so does ``%load_ext sessioncluster``), and the client calls them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(slots=True)
class DisplayHooks:
    """Renderers registered by a front end."""

    #: static HTML of a client object, by its class (``_repr_html_`` of Session, JobClient, ...)
    html: dict[type, Callable[[Any], str]] = field(default_factory=dict)
    #: the live widget of a job
    job_widget: Callable[[Any], Any] | None = None
    #: called with the JobClient of every job run attached (``execute``, ``execute_and_collect``)
    attached_job: Callable[[Any], None] | None = None
    #: called with a JobClient once a wait for its job's end returned (the job ended)
    job_ended: Callable[[Any], None] | None = None

    def html_of(self, obj: Any) -> str | None:
        """The registered HTML of ``obj``, or None (IPython then shows its text repr)."""
        render = self.html.get(type(obj))
        return render(obj) if render is not None else None

    def widget_of(self, client: Any) -> Any:
        if self.job_widget is None:
            raise RuntimeError("the job widget needs the Jupyter front end: run "
                               "`%load_ext sessioncluster` (or `import sessioncluster.jupyter`)")
        return self.job_widget(client)

    def on_attached_job(self, client: Any) -> None:
        if self.attached_job is not None:
            self.attached_job(client)

    def on_job_ended(self, client: Any) -> None:
        if self.job_ended is not None:
            self.job_ended(client)


#: the hooks of this process (filled by ``sessioncluster.jupyter``)
hooks = DisplayHooks()
