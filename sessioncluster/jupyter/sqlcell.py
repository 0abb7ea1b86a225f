"""A streaming query's live result in a ``%%flink_sql`` cell's output.

The cell's own thread fetches the job's changelog (``JobClient.stream()``), or in table mode
snapshots of the table the JobManager materialises, bounded in rows (as Flink's SQL client reads
its ``MaterializedCollectStreamResult``), applies it to a
:class:`~.sqlresult.LiveResult` and updates one display in place every ``refresh`` seconds
(``update_display``: from the cell's thread, so the update goes to the cell's output). When the
job ends, or the cell is interrupted (which cancels the job, as Zeppelin's cancel and Flink's SQL
client's quit do), the last update is the final table as plain HTML (and text), so a saved
notebook shows it.
"""

from __future__ import annotations

import pickle
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from IPython.core.error import UsageError

from ..client.jobclient import check
from ..common.checkpoints import is_retained_checkpoint
from ..graph.lifecycle import JobStatus
from ..protocol.messages import FetchStreamResults, StreamResults
from .sqlchart import ChartFigure
from .sqlresult import DEFAULT_MAX_ROWS, LiveResult

if TYPE_CHECKING:
    from ..client.session import Session, SqlStatementResult

#: how long, at most, the loop waits between two fetches while nothing comes
IDLE_POLL_SECONDS = 0.2
#: how long a cancelled job may take to be CANCELED before the cell gives up waiting
CANCEL_WAIT_SECONDS = 60.0


@dataclass(slots=True)
class LiveOptions:
    """How a cell shows a streaming query's result (the magic's options)."""

    mode: str | None = None
    max_rows: int = DEFAULT_MAX_ROWS
    template: str | None = None
    refresh_interval: float = 1.0
    #: an interrupt takes a savepoint here and stops the job (else it cancels the job)
    savepoint_dir: str | None = None
    #: ``(kind, x column, y column)`` of a Bokeh chart drawn beside the table
    chart: tuple[str, str, str] | None = None


def result_mode(options: LiveOptions, updating: bool) -> str:
    """The mode to show in: the one asked for, else ``table`` for an updating query and
    ``append`` for an append-only one (the SQL client's and Zeppelin's defaults). ``append``
    of an updating query fails, as Flink's append-only sinks refuse update changes."""
    mode = options.mode or ("table" if updating else "append")
    if mode == "append" and updating:
        raise UsageError("%%flink_sql: --mode append shows an append-only query, and this query produces "
                         "update changes (a GROUP BY without a window): use --mode table or "
                         "--mode changelog")
    return mode


class _Output:
    """One display in the cell's output, updated in place (in a kernel); elsewhere (a terminal)
    the final text is printed once."""

    def __init__(self, in_kernel: bool) -> None:
        self.in_kernel = in_kernel
        self.display_id = uuid.uuid4().hex

    def show(self, view: LiveResult, status: str, note: str = "", update: bool = True,
             final: bool = False) -> None:
        from IPython.display import display, update_display

        if not self.in_kernel:
            if final:
                print(view.text(status) + note)
            return
        bundle = {"text/html": view.html(status, note), "text/plain": view.text(status) + note}
        if update:
            update_display(bundle, raw=True, display_id=self.display_id)
        else:
            display(bundle, raw=True, display_id=self.display_id)


def show_live_result(session: "Session", outcome: "SqlStatementResult", options: LiveOptions,
                     in_kernel: bool) -> LiveResult:
    """Show the streaming query's result live until its job ends or the cell is interrupted
    (the job is then cancelled); the result as last shown."""
    client = session.job(outcome.job_id)
    try:
        mode = result_mode(options, outcome.live in ("update", "table"))
        if outcome.live == "table" and mode not in ("table", "single"):
            raise UsageError(f"%%flink_sql: the JobManager materialises this result (result "
                             f"mode table): --mode {mode} cannot show it")
    except UsageError:
        client.cancel()  # the job runs already: nobody would read its result
        raise
    view = LiveResult(outcome.columns, outcome.column_types, mode, options.max_rows,
                      options.template)
    chart = _chart(view, options, in_kernel, client)
    stream: Any = _SnapshotFeed(client) if outcome.live == "table" else _ChangeFeed(client)
    out = _Output(in_kernel)
    out.show(view, "RUNNING", update=False)

    def refresh() -> None:
        out.show(view, "RUNNING")
        if chart is not None:
            chart.update(view)

    note = ""
    try:
        _follow(stream, view, refresh, options.refresh_interval)
    except KeyboardInterrupt:
        note = _interrupted(client, stream, view, options)
    except Exception:
        out.show(view, _status(client), final=True)
        _final_chart(chart, view)
        raise
    _final_chart(chart, view)
    out.show(view, _final_status(client), note, final=True)
    return view


def _chart(view: LiveResult, options: LiveOptions, in_kernel: bool, client: Any
           ) -> ChartFigure | None:
    """The Bokeh chart asked for, shown in the cell (a kernel only: it is a widget)."""
    if options.chart is None or not in_kernel:
        return None
    kind, x, y = options.chart
    try:
        chart = ChartFigure(kind, view.header(), ["STRING"] * (view.mode == "changelog")
                            + view.types, x, y)
    except ValueError as exc:
        client.cancel()  # the job runs already: nobody would read its result
        raise UsageError(f"%%flink_sql: {exc}") from None
    chart.show()
    return chart


def _final_chart(chart: ChartFigure | None, view: LiveResult) -> None:
    if chart is not None:
        chart.show_final(view)


def _interrupted(client: Any, stream: Any, view: LiveResult, options: LiveOptions) -> str:
    """Cancel the job, or with a savepoint directory stop it with a savepoint (then apply the
    rows its last micro-batch gave); what the cell says about it."""
    if options.savepoint_dir:
        try:
            location = client.stop_with_savepoint(
                savepoint_directory=options.savepoint_dir).result()
        except Exception as exc:  # noqa: BLE001 - cancel the job instead, and say why
            stream.close()
            return f"; interrupted: no savepoint ({exc}), the job was cancelled"
        _follow(stream, view, lambda: None, options.refresh_interval)
        return f"; interrupted: savepoint {location}, the job stopped"
    try:
        client.cancel()
    except Exception as exc:  # noqa: BLE001 - say so in the cell, which ends anyway
        return f"; interrupted: cancelling the job failed ({exc})"
    finally:
        stream.close()  # stops reading (and cancels, when the cancel above did not go out)
    return "; interrupted: the job was cancelled"


def latest_savepoint(directory: str) -> str | None:
    """The newest savepoint written into ``directory`` (``savepoint-...``), or None."""
    root = Path(directory).expanduser()
    found = [p for p in root.glob("savepoint-*") if p.is_dir()] if root.is_dir() else []
    return str(max(found, key=lambda p: p.stat().st_mtime)) if found else None


def retained_checkpoint(directory: str) -> str | None:
    """``directory`` (a job's checkpoint directory) if it kept a checkpoint (a committed
    micro-batch of one of its queries), else None."""
    root = Path(directory).expanduser() if directory else None
    return str(root) if root is not None and is_retained_checkpoint(root) else None


class _ChangeFeed:
    """The job's changes as they come (``JobClient.stream()``), applied to a view."""

    def __init__(self, client: Any) -> None:
        self.stream = client.stream()

    @property
    def ended(self) -> bool:
        return bool(self.stream.ended)

    @property
    def dropped(self) -> int:
        return int(self.stream.dropped)

    def update(self, view: LiveResult) -> bool:
        """Apply what arrived since the last call; True when something did."""
        changes = self.stream.poll()
        if changes:
            view.apply(changes)
        return bool(changes)

    def close(self) -> None:
        self.stream.close()


class _SnapshotFeed:
    """Snapshots of the table the JobManager materialises (``live_result`` ``table``): the
    whole table each time it changed, at most ``--max-rows`` rows, as Flink's SQL client
    pages through its materialised result. ``close()`` cancels the job, as the stream's."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.version = 0
        self.dropped = 0
        self.ended = False

    def update(self, view: LiveResult) -> bool:
        """Show the newest snapshot; True when the table changed."""
        if self.ended:
            return False
        reply = self.client.session.gateway.request(
            FetchStreamResults(self.client.job_id, None, self.version, peek=True),
            StreamResults)
        changed = reply.next_seq != self.version
        if changed:
            view.replace(row for _, row in map(pickle.loads, reply.values))
            self.version, view.changes = reply.next_seq, reply.next_seq
        self.dropped = reply.dropped
        if reply.done:
            self.ended = True
            if reply.status is JobStatus.FAILED:
                check(self.client.wait(), self.client.job_name)
        return changed

    def close(self) -> None:
        if not self.ended:
            self.ended = True
            try:
                self.client.cancel()
            except Exception:  # noqa: BLE001 - the job may be gone already
                pass


def _follow(stream: Any, view: LiveResult, refresh: Callable[[], None], interval: float) -> None:
    """Apply what the job produces until it ends, refreshing the display every ``interval``
    seconds (when something changed). Memory stays bounded: each fetch is applied at once
    (a snapshot feed fetches once per ``interval``: the table is at most ``--max-rows``)."""
    shown_at, changed = time.monotonic(), False
    pause = interval if isinstance(stream, _SnapshotFeed) else min(interval, IDLE_POLL_SECONDS)
    while not stream.ended:
        got = stream.update(view)
        changed = changed or got
        if stream.dropped != view.dropped_by_job:
            view.dropped_by_job, changed = stream.dropped, True
        if changed and time.monotonic() - shown_at >= interval:
            refresh()
            shown_at, changed = time.monotonic(), False
        if not got or isinstance(stream, _SnapshotFeed):
            time.sleep(pause)


def _status(client: Any) -> str:
    try:
        return str(client.get_job_status().value)
    except Exception:  # noqa: BLE001 - the session may be gone: say so, not fail again
        return "UNKNOWN"


def _final_status(client: Any) -> str:
    """The job's status once it is terminal (a cancelled job takes a moment to be CANCELED)."""
    deadline = time.monotonic() + CANCEL_WAIT_SECONDS
    while True:
        status = client.get_job_status()
        if status.is_globally_terminal or time.monotonic() > deadline:
            return str(status.value)
        time.sleep(0.1)

