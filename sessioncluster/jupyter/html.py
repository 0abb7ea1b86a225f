"""Static HTML (with an inline SVG of the JobGraph) for notebooks: pure functions from
``JobDetails`` / ``ClusterOverview`` (or the client-side views) to HTML strings.

These back ``_repr_html_`` of :class:`~sessioncluster.Session`, :class:`~sessioncluster.JobClient`
and :class:`~sessioncluster.JobExecutionResult`, and the tables inside the live widgets. The
output is self-contained (inline styles, no scripts), so it survives in a saved notebook.

Every text is escaped with :func:`html.escape` (quotes too: the same text goes into attributes).
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterable, Mapping
from html import escape
from typing import TYPE_CHECKING, Any, Protocol

from ..graph.jobgraph import JobGraph
from ..protocol.messages import ClusterOverview, JobDetails, JobSummary
from .dag import layout_dag, node_lines, state_color, text_color
from .models import ClusterView, JobView, VertexView, is_histogram

if TYPE_CHECKING:
    from ..client.jobclient import JobClient, JobExecutionResult
    from ..client.session import Session
    from ..cluster.connection import ConnectionInfo

FONT = "font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 12px;"
_TABLE = "border-collapse: collapse; margin: 4px 0 8px 0;"
_TH = "text-align: left; padding: 2px 10px 2px 0; border-bottom: 1px solid #ccc; font-weight: 600;"
_TD = ("text-align: left; padding: 2px 10px 2px 0; border-bottom: 1px solid #eee; "
       "vertical-align: top;")
MAX_ROWS = 200


class _VertexLike(Protocol):
    state: Any
    records_in: int
    records_out: int


def badge(state: object, label: str | None = None) -> str:
    """A label coloured as an ExecutionState or JobStatus (``label`` replaces the state's name)."""
    return (f'<span style="background: {state_color(str(state))}; color: {text_color(str(state))};'
            f' border-radius: 3px; padding: 1px 6px; font-weight: 600;">'
            f'{escape(str(state if label is None else label))}</span>')


def volatile(text: str) -> str:
    """A value that differs between two runs of the same program (a duration, a time, a pid,
    an address, a TaskManager or slot a subtask happened to run in), escaped and marked
    ``class="sc-volatile"`` so that a comparison of saved outputs (nbval) can mask it."""
    return f'<span class="sc-volatile">{escape(text)}</span>'


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], more: int = 0) -> str:
    """An HTML table; cells are HTML already (escape them with :func:`html.escape`)."""
    head = "".join(f'<th style="{_TH}">{escape(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f'<td style="{_TD}">{c}</td>' for c in row) + "</tr>"
                   for row in rows)
    tail = f'<div style="color: #777;">… and {more} more</div>' if more > 0 else ""
    return (f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            f'</table>{tail}')


def format_seconds(seconds: float | None) -> str:
    """``3.2 s``, ``2 min 05 s``; an em dash when unknown."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(seconds), 60)
    return f"{m} min {s:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def format_value(value: Any, limit: int = 300) -> str:
    """An accumulator value as text (numbers exactly as ``str`` gives them)."""
    if isinstance(value, float):
        text = repr(value)
    elif isinstance(value, (int, str)):
        text = str(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the JobGraph as SVG ------------------------------------------------------------------------

NODE_W, LINE_H, PAD, GAP_X, GAP_Y, MARGIN = 210, 14, 8, 70, 22, 12


def dag_svg(job_graph: JobGraph, vertices: Mapping[str, _VertexLike] | None = None) -> str:
    """The JobGraph drawn left to right: one box per JobVertex (chained operators, parallelism,
    records in/out), filled by the vertex's state; edges labelled with their ship strategy."""
    vs = job_graph.vertices
    layout = layout_dag([v.vertex_id for v in vs], [(e.source, e.target) for e in job_graph.edges])
    info = vertices or {}
    labels: dict[str, list[str]] = {}
    for v in vs:
        i = info.get(v.vertex_id)
        labels[v.vertex_id] = node_lines([op.name for op in v.operators] or [v.name], v.parallelism,
                                         i.records_in if i is not None else None,
                                         i.records_out if i is not None else None)
    node_h = max((len(lines) for lines in labels.values()), default=1) * LINE_H + 2 * PAD
    width = 2 * MARGIN + layout.layers * NODE_W + max(0, layout.layers - 1) * GAP_X
    height = 2 * MARGIN + layout.rows * node_h + max(0, layout.rows - 1) * GAP_Y
    ids = "".join(v.vertex_id for v in vs).encode()
    marker = "sc-arrow-" + hashlib.sha256(ids).hexdigest()[:10]  # one per graph, not per page

    def corner(vid: str) -> tuple[float, float]:
        layer, row = layout.positions[vid]
        return MARGIN + layer * (NODE_W + GAP_X), MARGIN + row * (node_h + GAP_Y)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" '
             f'font-size="11">',
             f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
             f'markerHeight="7" orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="#666"/>'
             f'</marker></defs>']
    for e in job_graph.edges:
        (sx, sy), (tx, ty) = corner(e.source), corner(e.target)
        x1, y1, x2, y2 = sx + NODE_W, sy + node_h / 2, tx, ty + node_h / 2
        mx = (x1 + x2) / 2
        parts.append(f'<path d="M {x1:.1f} {y1:.1f} C {mx:.1f} {y1:.1f} {mx:.1f} {y2:.1f} '
                     f'{x2 - 1:.1f} {y2:.1f}" fill="none" stroke="#666" stroke-width="1.4" '
                     f'marker-end="url(#{marker})"/>')
        parts.append(f'<text x="{mx:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" text-anchor="middle" '
                     f'font-size="9" fill="#555">{escape(e.ship_strategy.value)}</text>')
    for v in vs:
        x, y = corner(v.vertex_id)
        i = info.get(v.vertex_id)
        state = str(i.state) if i is not None else "CREATED"
        title = f"{v.name}\nparallelism {v.parallelism}\n{state}"
        parts.append(f'<g><title>{escape(str(title))}</title>'
                     f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{node_h}" rx="6" '
                     f'fill="{state_color(state)}" stroke="#333" stroke-width="1"/>'
                     f'<text x="{x + PAD:.1f}" y="{y + PAD:.1f}" fill="{text_color(state)}">')
        for k, line in enumerate(labels[v.vertex_id]):
            weight = ' font-weight="bold"' if k < max(len(v.operators), 1) else ""
            parts.append(f'<tspan x="{x + PAD:.1f}" dy="{LINE_H if k else LINE_H - 3}"{weight}>'
                         f'{escape(str(line))}</tspan>')
        parts.append("</text></g>")
    parts.append("</svg>")
    return "".join(parts)


# -- tables --------------------------------------------------------------------------------------

def vertices_table(vertices: Iterable[VertexView]) -> str:
    rows = [[escape(v.name), str(v.parallelism), badge(v.state), str(v.records_in), str(v.records_out)]
            for v in vertices]
    return table(["JobVertex", "parallelism", "state", "records in", "records out"], rows)


def subtasks_table(view: JobView) -> str:
    """One row per ExecutionVertex (its latest attempt): TaskManager, slot, attempt, state."""
    current = view.current_executions()
    rows = []
    for ex in current[:MAX_ROWS]:
        v = view.vertices.get(ex.vertex_id)
        name = v.name if v is not None else ex.vertex_id
        par = v.parallelism if v is not None else "?"
        rows.append([escape(name), f"{ex.subtask + 1}/{par}", volatile(ex.tm_id or "—"),
                     volatile("—" if ex.slot is None else str(ex.slot)), f"#{ex.attempt}",
                     badge(ex.state)])
    return table(["JobVertex", "subtask", "TaskManager", "slot", "attempt", "state"], rows,
                 len(current) - MAX_ROWS)


def histogram_svg(counts: Mapping[int, int], width: int = 240, height: int = 60) -> str:
    """A small bar chart of a Histogram accumulator (bin -> count)."""
    if not counts:
        return ""
    bins = sorted(counts)
    top = max(max(counts.values()), 1)
    bar = width / len(bins)
    bars = "".join(
        f'<rect x="{i * bar:.1f}" y="{height - counts[b] / top * (height - 2):.1f}" '
        f'width="{max(bar - 1, 1):.1f}" height="{counts[b] / top * (height - 2):.1f}" '
        f'fill="#2b7bcb"><title>{b}: {counts[b]}</title></rect>'
        for i, b in enumerate(bins))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">{bars}</svg>')


def accumulators_table(values: Mapping[str, Any], final: bool = True) -> str:
    if not values:
        return '<div style="color: #777;">no accumulators</div>'
    rows = []
    for name in sorted(values):
        value = values[name]
        if is_histogram(value):
            text = ", ".join(f"{k}: {value[k]}" for k in sorted(value))
            cell = (f'{histogram_svg(value)}'
                    f'<div style="color: #555;">{escape(format_value(text))}</div>')
        else:
            cell = f"<code>{escape(format_value(value))}</code>"
        rows.append([escape(name), cell])
    return table(["accumulator", "final value" if final else "live value"], rows)


def error_block(error_text: str) -> str:
    return (f'<pre style="background: #fdf0f0; border-left: 3px solid #d9534f; padding: 6px; '
            f'white-space: pre-wrap; font-size: 11px;">{escape(error_text)}</pre>')


def job_header(view: JobView, net_runtime_ms: int | None = None) -> str:
    done, total = view.progress
    took = (f"{net_runtime_ms} ms net runtime" if net_runtime_ms is not None
            else format_seconds(view.elapsed()))
    progress = f" · {done}/{total} subtasks finished" if total else ""
    return (f'<div style="{FONT}"><b style="font-size: 14px;">{escape(view.name)}</b> '
            f'{badge(view.status)} <span style="color: #555;">job <code>{escape(view.job_id)}</code>'
            f' · {volatile(took)}{progress}</span></div>')


def job_view_html(view: JobView, net_runtime_ms: int | None = None,
                  accumulators: Mapping[str, Any] | None = None) -> str:
    """A job: header, the JobGraph as SVG, vertices, subtasks, accumulators, error."""
    accs = view.accumulators if accumulators is None else accumulators
    parts = [f'<div style="{FONT}">', job_header(view, net_runtime_ms)]
    if view.job_graph is not None:
        parts.append(f'<div style="overflow-x: auto; margin: 6px 0;">'
                     f'{dag_svg(view.job_graph, view.vertices)}</div>')
    parts.append(vertices_table(view.vertices.values()))
    parts.append(accumulators_table(accs, final=view.terminal))
    if view.error_text:
        parts.append(error_block(view.error_text))
    parts.append(f'<details><summary>subtasks</summary>{subtasks_table(view)}</details></div>')
    return "".join(parts)


def job_details_html(details: JobDetails, net_runtime_ms: int | None = None,
                     accumulators: Mapping[str, Any] | None = None) -> str:
    """The static view of a job from its ``JobDetails``."""
    view = JobView(details.summary.job_id, details.summary.name)
    view.apply_details(details)
    return job_view_html(view, net_runtime_ms, accumulators)


# -- the cluster ---------------------------------------------------------------------------------

def taskmanagers_table(view: ClusterView) -> str:
    now = view.fetched_at
    rows = []
    for tm in sorted(view.taskmanagers.values(), key=lambda t: t.tm_id):
        age = (f"{max(0.0, now - tm.last_heartbeat):.1f} s"
               if now is not None and tm.last_heartbeat else "—")
        c = tm.library_cache
        rows.append([f"<code>{escape(tm.tm_id)}</code>", escape(tm.host), volatile(str(tm.pid)),
                     f"{tm.slots_used}/{tm.slots}", volatile(age),
                     f"{c.entries} ({c.hits} hits, {c.misses} misses)",
                     badge(tm.state) if tm.state != "REGISTERED" else escape(tm.state)])
    return table(["TaskManager", "host", "pid", "slots used", "heartbeat age",
                  "library cache entries", "state"], rows)


def jobs_table(jobs: Iterable[JobSummary]) -> str:
    rows = []
    for j in jobs:
        started = datetime.datetime.fromtimestamp(j.start_time).strftime("%H:%M:%S")
        took = format_seconds(j.end_time - j.start_time) if j.end_time else "running"
        rows.append([f"<code>{escape(j.job_id)}</code>", escape(j.name), badge(j.status),
                     volatile(started), volatile(took),
                     f"{j.tasks_finished}/{j.tasks_total}" if j.tasks_total else "—"])
    if not rows:
        return '<div style="color: #777;">no jobs</div>'
    return table(["job", "name", "status", "started", "duration", "subtasks"], rows)


def cluster_view_html(view: ClusterView) -> str:
    """Endpoint, TaskManagers, running and recent jobs."""
    state = "stopped" if view.stopped else ("ready" if view.ready else "starting")
    as_of = (datetime.datetime.fromtimestamp(view.fetched_at).strftime("%H:%M:%S")
             if view.fetched_at else "—")
    live = sum(tm.state == "REGISTERED" for tm in view.taskmanagers.values())
    return (f'<div style="{FONT}"><b style="font-size: 14px;">session cluster '
            f'{escape(view.name)}</b> {badge("FINISHED" if state == "ready" else "CANCELED", state)}'
            f'<div style="color: #555;">JobManager <code>{volatile(view.dispatcher)}</code> (pid '
            f'{volatile(str(view.jobmanager_pid))}) on <code>{escape(view.spark_master)}</code></div>'
            f'<div style="margin-top: 6px;"><b>TaskManagers</b> ({live} of '
            f'{view.expected_taskmanagers}, as of {volatile(as_of)})</div>{taskmanagers_table(view)}'
            f'<div><b>Running jobs</b></div>{jobs_table(view.running_jobs())}'
            f'<div><b>Recent jobs</b></div>{jobs_table(view.recent_jobs())}</div>')


def cluster_overview_html(overview: ClusterOverview, info: "ConnectionInfo | None" = None) -> str:
    """The static view of a session cluster from its ``ClusterOverview``."""
    view = ClusterView(overview.name, dispatcher=info.dispatcher if info is not None else "")
    view.apply_overview(overview)
    return cluster_view_html(view)


# -- _repr_html_ of the client objects -----------------------------------------------------------

def _unavailable(what: str, exc: Exception) -> str:
    return (f'<div style="{FONT}"><b>{escape(what)}</b> <span style="color: #777;">'
            f'({escape(type(exc).__name__)}: {escape(str(exc))})</span></div>')


def session_html(session: "Session") -> str:
    """``Session._repr_html_``: the cluster overview, or a note when it is not running."""
    from ..client.gateway import DispatcherError, JobManagerGoneError

    if not session.gateway.jobmanager_alive():
        return (f'<div style="{FONT}"><b>session cluster {escape(session.name)}</b> '
                f'{badge("CANCELED", "stopped")} '
                f'<span style="color: #555;">(JobManager pid {session.info.jobmanager_pid} '
                f'is gone)</span></div>')
    try:
        overview = session.status()
    except (JobManagerGoneError, DispatcherError) as exc:
        return _unavailable(f"session cluster {session.name}", exc)
    return cluster_overview_html(overview, session.info)


def job_client_html(client: "JobClient") -> str:
    """``JobClient._repr_html_``: the job's current state."""
    from ..client.gateway import DispatcherError, JobManagerGoneError

    try:
        details = client.details()
    except (JobManagerGoneError, DispatcherError) as exc:
        return _unavailable(f"job {client.job_name or client.job_id}", exc)
    return job_details_html(details)


def job_result_html(result: "JobExecutionResult") -> str:
    """``JobExecutionResult._repr_html_``: the finished job with its final accumulators (the
    JobGraph and states too when the result knows its JobClient and the session still runs)."""
    from ..client.gateway import DispatcherError, JobManagerGoneError

    accumulators = result.get_all_accumulator_results()
    client = getattr(result, "_client", None)
    if client is not None:
        try:
            return job_details_html(client.details(), result.net_runtime, accumulators)
        except (JobManagerGoneError, DispatcherError):
            pass  # the session is gone: what the result itself holds
    view = JobView(result.job_id, result.job_name, status=result._reply.status)
    return (f'<div style="{FONT}">{job_header(view, result.net_runtime)}'
            f'{accumulators_table(accumulators)}</div>')

