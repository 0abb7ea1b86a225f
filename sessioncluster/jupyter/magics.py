"""``%flink_session`` and ``%%flink_sql``: a session cluster from a notebook.

Load with ``%load_ext sessioncluster``; ``%flink_session --help`` lists the commands.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display

from ..client.gateway import DispatcherError, JobManagerGoneError
from ..client.session import SessionStartError, connect, start, start_standby
from ..cluster.connection import pid_alive
from ..common.execution_mode import RuntimeExecutionMode
from ..common.sqlscript import (
    MAX_TABLE_RESULT_ROWS,
    RESULT_MODE,
    as_statement_set,
    split_statements,
)
from ..options import DEFAULT_NAME, StartOptions
from ..protocol.messages import JobStatusChanged, Message
from .sqlcell import LiveOptions, latest_savepoint, retained_checkpoint, show_live_result
from .sqlchart import CHARTS
from .sqlresult import DEFAULT_MAX_ROWS, MODES, substitute

if TYPE_CHECKING:
    from ..client.session import Session
    from .widgets import ClusterWidget

COMMANDS = ("start", "connect", "status", "jobs", "cancel", "stop", "ui", "standby")
#: cluster widgets kept live per shell; older ones keep their last state
MAX_LIVE_CLUSTER_WIDGETS = 4

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def start_args(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options of ``start`` (as ``sessioncluster start``: one declaration,
    :class:`~sessioncluster.options.StartOptions`), composable onto any magic. ``--name``
    defaults to None here: the session of the last start/connect, else ``default``."""
    decorators: list[Decorator] = [magic_arguments.argument_group("start options")]
    for flag, kwargs in StartOptions.flags():
        if kwargs["dest"] == "name":
            kwargs = {**kwargs, "default": None}
        decorators.append(magic_arguments.argument(flag, **kwargs))
    for a in reversed(decorators):
        f = a(f)
    return f


def session_args(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--name``: which session a cell magic runs on (default: the current one)."""
    return magic_arguments.argument(
        "--name", default=None, metavar="N",
        help="the session to use (default: the one of the last start/connect)")(f)


def _in_kernel(shell: Any) -> bool:
    return getattr(shell, "kernel", None) is not None


@magics_class
class SessionClusterMagics(Magics):
    """The magics of one IPython shell; ``session`` is the current session cluster (set by
    ``start`` and ``connect``, cleared by ``stop``)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.session: Session | None = None
        self._cluster_widgets: list[ClusterWidget] = []
        #: ``(session, job name, cell text)`` -> the id of the last STREAMING job the cell ran
        self._cell_jobs: dict[tuple[str, str, str], str] = {}

    # -- %flink_session ---------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("-h", "--help", action="store_true", help="show this help")
    @magic_arguments.argument("command", nargs="?", choices=COMMANDS, default=None,
                              help="what to do: " + ", ".join(COMMANDS))
    @magic_arguments.argument(
        "target", nargs="?", default=None,
        help="a session name (connect, status, jobs, stop, ui, standby) or a job id (cancel)")
    @start_args
    @line_magic
    def flink_session(self, line: str = "") -> "Session | None":
        """Start, connect to, inspect and stop a session cluster.

        Commands::

            start [--name N] [--taskmanagers T] [--slots S] [--memory MB] [--spark-master URL]
                        start a session cluster (or connect, if N is running) and show it
            connect N   connect to the running session cluster N and show it
            status [N]  the live cluster view: JobManager, TaskManagers, jobs
            jobs [N]    the session's jobs as a table
            cancel ID   cancel a job
            stop [N]    stop the session cluster (JobManager, Spark, TaskManagers)
            ui [N]      the web dashboard's link, and the live cluster view
            standby [N] start a standby JobManager for an HA session (start --ha file)

        ``start`` and ``connect`` return the Session and make it the current one.

        Examples::

            %load_ext sessioncluster
            session = %flink_session start --name dev --taskmanagers 2 --slots 2
            session = %flink_session connect dev
            %flink_session status
            %flink_session jobs
            %flink_session cancel 6b4c0ceb1d6e4a57b2f9efa0812e842a
            %flink_session stop
            session = %flink_session start --name prod --ha file
            %flink_session standby prod
        """
        args = magic_arguments.parse_argstring(self.flink_session, line)
        if args.help or args.command is None:
            print(self.flink_session.__doc__)
            return None
        if args.command != "start" and _start_options_given(args):
            raise UsageError(f"--name, --taskmanagers, ... belong to 'start'; "
                             f"use '%flink_session {args.command} NAME'")
        handler = getattr(self, f"_cmd_{args.command}")
        try:
            return handler(args)
        except (LookupError, ValueError, SessionStartError, JobManagerGoneError,
                DispatcherError) as exc:
            raise UsageError(f"%flink_session {args.command}: {exc}") from exc

    def _cmd_start(self, args: Any) -> "Session":
        if args.target is not None:
            raise UsageError("start takes its name as --name N")
        options = StartOptions.from_namespace(args, name=args.name or DEFAULT_NAME)
        session = start(**dataclasses.asdict(options))
        return self._use(session)

    def _cmd_connect(self, args: Any) -> "Session":
        return self._use(connect(args.target or DEFAULT_NAME))

    def _cmd_status(self, args: Any) -> None:
        self._show_cluster(self._session(args.target))

    def _cmd_ui(self, args: Any) -> None:
        session = self._session(args.target)
        print(f"dashboard: {session.dashboard_url}")
        self._show_cluster(session)

    def _cmd_standby(self, args: Any) -> None:
        name = args.target or (self.session.name if self.session is not None else DEFAULT_NAME)
        pid = start_standby(name)
        print(f"standby JobManager pid {pid} of session '{name}' is warm")

    def _cmd_jobs(self, args: Any) -> None:
        from ..client.text import format_jobs
        from .html import jobs_table

        jobs = self._session(args.target).jobs()
        display({"text/plain": format_jobs(jobs), "text/html": jobs_table(jobs)}, raw=True)

    def _cmd_cancel(self, args: Any) -> None:
        if not args.target:
            raise UsageError("cancel needs a job id: %flink_session cancel JOB_ID")
        session = self._session(None)
        try:
            client = session.job(args.target)
        except DispatcherError as exc:
            raise UsageError(f"no job {args.target} in session '{session.name}': {exc}") from exc
        client.cancel()
        print(f"cancelling job {client.job_id} of session '{session.name}'")

    def _cmd_stop(self, args: Any) -> None:
        session = self._session(args.target)
        pid = session.info.jobmanager_pid
        session.stop()
        for widget in [w for w in self._cluster_widgets if w.session.name == session.name]:
            widget.mark_stopped()
            widget.stopped.wait(5.0)  # its last snapshot goes out while this cell runs
            self._cluster_widgets.remove(widget)
        if self.session is not None and self.session.name == session.name:
            self.session = None
        state = "alive!" if pid_alive(pid) else "gone"
        print(f"stopped session cluster '{session.name}' (JobManager pid {pid} {state})")

    # -- %%flink_sql ------------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("-o", "--out", default=None, metavar="VAR",
                              help="also store the DataFrame in this variable (a streaming "
                                   "query's: the result as last shown)")
    @magic_arguments.argument("--dialect", default="flink", choices=["flink", "spark"],
                              help="Flink SQL (the default) or Spark SQL as Spark runs it")
    @magic_arguments.argument("--runtime-mode", default=None, choices=["batch", "streaming"],
                              help="the cell's runtime mode (default: batch, or streaming when "
                                   "--mode is given; a SET 'execution.runtime-mode' of the "
                                   "session wins)")
    @magic_arguments.argument("-m", "--mode", default=None, choices=list(MODES),
                              help="how a streaming query's live result is shown: table "
                                   "(materialised; default for updating queries), changelog, "
                                   "append (default for append-only queries) or single; "
                                   "implies --runtime-mode streaming")
    @magic_arguments.argument("--template", default=None, metavar="HTML",
                              help="--mode single: the HTML of the last row ({0} its first "
                                   "column, {name} a column by name)")
    @magic_arguments.argument("--refresh-interval", type=float, default=1.0, metavar="S",
                              help="seconds between two updates of a live result (default 1)")
    @magic_arguments.argument("--max-rows", type=int, default=DEFAULT_MAX_ROWS, metavar="N",
                              help="rows a live result keeps (default 1000), on the "
                                   "JobManager too: the newest, or in table mode the table "
                                   "materialised there, its oldest rows evicted")
    @magic_arguments.argument("-p", "--parallelism", type=int, default=None, metavar="N",
                              help="the parallelism of the cell's STREAMING jobs (Flink's "
                                   "parallelism.default: their shuffles' partitions)")
    @magic_arguments.argument("--job-name", default=None, metavar="NAME",
                              help="the name of the cell's jobs (Flink's pipeline.name)")
    @magic_arguments.argument("-d", "--detach", action="store_true",
                              help="STREAMING: return at once; the job keeps running after the "
                                   "cell (its JobClient is the cell's value; an INSERT INTO "
                                   "returns at once anyway)")
    @magic_arguments.argument("--savepoint-dir", default=None, metavar="DIR",
                              help="STREAMING: interrupting the cell takes a savepoint into DIR "
                                   "and stops the job (instead of cancelling it)")
    @magic_arguments.argument("--resume", action="store_true",
                              help="start from the latest savepoint in --savepoint-dir, else "
                                   "from the latest retained checkpoint of the cell's last job "
                                   "(Flink's execution.savepoint.path)")
    @magic_arguments.argument("--resume-from", default=None, metavar="PATH",
                              help="start from this savepoint or retained checkpoint directory "
                                   "(Flink's execution.savepoint.path)")
    @magic_arguments.argument("--run-as-one", action="store_true",
                              help="run the cell's INSERT INTO statements as one job (Flink's "
                                   "statement set, Zeppelin's runAsOne), where the last of them "
                                   "is; without it each INSERT is a job of its own")
    @magic_arguments.argument("--chart", default=None, choices=list(CHARTS),
                              help="draw the live result with Bokeh too (needs --x and --y)")
    @magic_arguments.argument("--x", default=None, metavar="COL", help="the chart's x column")
    @magic_arguments.argument("--y", default=None, metavar="COL", help="the chart's y column")
    @magic_arguments.argument("--no-substitute", action="store_true",
                              help="leave {name} in the cell as it is (default: replaced by "
                                   "the kernel variable name; {{ and }} are braces)")
    @session_args
    @cell_magic
    def flink_sql(self, line: str, cell: str) -> Any:
        """Run the cell's SQL statements on the session cluster, in turn, as Flink's SQL client
        does; the last query's rows are returned as a pandas DataFrame. A query in STREAMING
        mode shows its result live, updated while its job runs, until the job ends or the cell
        is interrupted (which cancels the job); the final table stays in the output.

        The job widget of each job that starts meanwhile is shown above the result.

        Examples::

            %%flink_sql
            CREATE TABLE bids (item STRING, price DOUBLE, ts TIMESTAMP(3))
              WITH ('connector' = 'filesystem', 'path' = 'bids.csv', 'format' = 'csv');
            SELECT item, SUM(price) AS total FROM bids GROUP BY item

            %%flink_sql --mode table --max-rows 100
            SELECT item, COUNT(*) AS n FROM live_bids GROUP BY item

            %%flink_sql --dialect spark --out squares
            SELECT id * id AS square FROM range(10)
        """
        args = magic_arguments.parse_argstring(self.flink_sql, line)
        session = self._session(args.name)
        statements = self._statements(args, cell)
        streaming = (args.runtime_mode or ("streaming" if args.mode else "batch")) == "streaming"
        mode = RuntimeExecutionMode.STREAMING if streaming else RuntimeExecutionMode.BATCH
        if args.chart and not (args.x and args.y):
            raise UsageError("%%flink_sql: --chart needs the columns to draw: --x COL --y COL")
        live = LiveOptions(args.mode, args.max_rows, args.template, args.refresh_interval,
                           args.savepoint_dir, (args.chart, args.x, args.y) if args.chart else None)
        if args.max_rows < 1 or args.refresh_interval <= 0:
            raise UsageError("%%flink_sql: --max-rows must be at least 1 and "
                             "--refresh-interval more than 0")
        if args.detach and not streaming:
            raise UsageError("%%flink_sql: --detach is for STREAMING statements (--mode or "
                             "--runtime-mode streaming); a BATCH job ends with its cell")
        cell_key = (session.name, args.job_name or "", "\n".join(statements))
        if (args.resume or args.resume_from) and not streaming:
            raise UsageError("%%flink_sql: --resume and --resume-from are for STREAMING "
                             "statements (--mode or --runtime-mode streaming)")
        configuration = cell_configuration(args)
        if streaming:  # the JobManager keeps --max-rows too: the rows of an updating query
            # materialised there in table mode (single mode shows the table's last row), the
            # newest changes otherwise (Flink's SQL client options)
            configuration[MAX_TABLE_RESULT_ROWS] = str(args.max_rows)
            configuration[RESULT_MODE] = ("changelog" if args.mode in ("changelog", "append")
                                          else "table")
            configuration.update(self._resume_configuration(args, session, cell_key))
        unsubscribe = self._show_jobs_started(session) if _in_kernel(self.shell) else None
        result: Any = None
        try:
            for statement in statements:
                outcome = session.execute_sql(statement, dialect=args.dialect, runtime_mode=mode,
                                              configuration=configuration)
                if streaming and outcome.job_id:
                    self._cell_jobs[cell_key] = outcome.job_id
                if outcome.result_kind == "SUCCESS":
                    print("[INFO] Execute statement succeeded.")
                    result = None
                elif outcome.live and args.detach:
                    result = session.job(outcome.job_id)
                    print(f"[INFO] Job {outcome.job_id} runs detached: '%flink_session cancel "
                          f"{outcome.job_id}' stops it.")
                elif outcome.live:
                    result = show_live_result(session, outcome, live,
                                              _in_kernel(self.shell)).frame()
                else:
                    result = outcome.table.to_pandas()
        except (JobManagerGoneError, DispatcherError) as exc:
            raise UsageError(f"%%flink_sql: {exc}") from exc
        finally:
            if unsubscribe is not None:
                unsubscribe()
        if args.out:
            assert self.shell is not None  # a magic runs in a shell
            self.shell.user_ns[args.out] = result
        return None if outcome.live and not args.detach else result

    def _resume_configuration(self, args: Any, session: "Session",
                              cell_key: tuple[str, str, str]) -> dict[str, str]:
        """``execution.savepoint.path`` of ``--resume-from`` or ``--resume`` (the latest
        savepoint in ``--savepoint-dir``, else the latest retained checkpoint of the cell's last
        job); a UsageError when there is nothing to resume from."""
        if args.resume_from:
            path = Path(args.resume_from).expanduser()
            if not path.exists():
                raise UsageError(f"%%flink_sql: --resume-from {args.resume_from}: no such "
                                 "savepoint or checkpoint directory")
            print(f"[INFO] Resuming from {path}.")
            return {"execution.savepoint.path": str(path.absolute())}
        if not args.resume:
            return {}
        latest = latest_savepoint(args.savepoint_dir) if args.savepoint_dir else None
        where = f"no savepoint in {args.savepoint_dir}" if args.savepoint_dir else \
            "no --savepoint-dir"
        if latest is None:
            latest = self._retained_checkpoint(session, cell_key)
            if latest is None:
                raise UsageError(f"%%flink_sql: --resume: nothing to resume from ({where}, and "
                                 "no retained checkpoint of a job this cell ran)")
            print(f"[INFO] {where.capitalize()}: resuming from the retained checkpoint "
                  f"{latest}.")
        else:
            print(f"[INFO] Resuming from {latest}.")
        return {"execution.savepoint.path": latest}

    def _retained_checkpoint(self, session: "Session", cell_key: tuple[str, str, str]
                             ) -> str | None:
        """The checkpoint directory of the cell's last job (or, with ``--job-name``, of the
        newest ended job of that name), if it kept a committed micro-batch."""
        candidates = [self._cell_jobs[cell_key]] if cell_key in self._cell_jobs else []
        if cell_key[1]:
            named = [j for j in session.jobs() if j.name == cell_key[1]
                     and j.status.is_globally_terminal]
            candidates += [j.job_id for j in sorted(named, key=lambda j: -j.start_time)]
        for job_id in candidates:
            try:
                streaming = session.job(job_id).details().streaming or {}
            except (DispatcherError, LookupError):
                continue
            found = retained_checkpoint(str(streaming.get("checkpoint_dir") or ""))
            if found is not None:
                return found
        return None

    def _statements(self, args: Any, cell: str) -> list[str]:
        """The cell's statements, its ``{name}`` replaced by kernel variables first."""
        if not args.no_substitute:
            assert self.shell is not None  # a magic runs in a shell
            try:
                cell = substitute(cell, self.shell.user_ns)
            except NameError as exc:
                raise UsageError(f"%%flink_sql: {exc}") from None
        statements = split_statements(cell) if args.dialect == "flink" else [cell.strip()]
        if not statements or not statements[0]:
            raise UsageError("%%flink_sql needs a statement in the cell")
        if args.run_as_one:
            if args.dialect != "flink":
                raise UsageError("%%flink_sql: --run-as-one runs Flink SQL INSERTs (a statement "
                                 "set): not with --dialect spark")
            statements = as_statement_set(statements)
        return statements

    def _show_jobs_started(self, session: "Session") -> Callable[[], None]:
        """Show the job widget of each job that starts until the returned function is called."""
        import threading

        import ipywidgets as widgets

        from ..client.jobclient import JobClient
        from .widgets import JobWidget
        from .widgets.bokeh_views import load_bokehjs

        load_bokehjs()  # here, in the cell: the job widgets below are made on other threads
        box = widgets.VBox()
        display(box)
        seen: set[str] = set()
        lock = threading.Lock()

        def on_event(_topic: str, msg: Message) -> None:
            if not isinstance(msg, JobStatusChanged) or msg.status.is_globally_terminal:
                return
            with lock:
                if msg.job_id in seen:
                    return
                seen.add(msg.job_id)
            # made on a thread of its own: the event thread must stay quick
            threading.Thread(target=lambda: _add(JobClient(session, msg.job_id, msg.name)),
                             daemon=True).start()

        def _add(client: JobClient) -> None:
            widget = JobWidget(client)
            with lock:
                box.children = (*box.children, widget)

        return session.events.subscribe("cluster", on_event)

    # -- helpers ----------------------------------------------------------------------------
    def _use(self, session: "Session") -> "Session":
        """Make ``session`` the current one, show it, return it."""
        self.session = session
        from ..client.current import set_current

        set_current(session)  # for StreamExecutionEnvironment.get_execution_environment()
        session.events  # noqa: B018 - subscribe now, so the first job's events are not missed
        self._show_cluster(session)
        return session

    def _session(self, name: str | None) -> "Session":
        if name is None or (self.session is not None and self.session.name == name):
            if self.session is None:
                raise UsageError("no current session cluster: run '%flink_session start' or "
                                 "'%flink_session connect NAME' first")
            return self.session
        return connect(name)

    def _show_cluster(self, session: "Session") -> None:
        if not _in_kernel(self.shell):
            from ..client.text import format_overview

            print(format_overview(session.status(), session.info))
            return
        from .widgets import ClusterWidget

        live = [w for w in self._cluster_widgets if not w.stopped.is_set()]
        for old in live[: max(0, len(live) - MAX_LIVE_CLUSTER_WIDGETS + 1)]:
            old.stop_following()
        widget = ClusterWidget(session)
        self._cluster_widgets = [*live[-(MAX_LIVE_CLUSTER_WIDGETS - 1):], widget]
        display(widget)


def cell_configuration(args: Any) -> dict[str, str]:
    """The Flink options a ``%%flink_sql`` cell's flags set for its statements."""
    configuration = {}
    if args.parallelism is not None:
        if args.parallelism < 1:
            raise UsageError("%%flink_sql: --parallelism must be at least 1")
        configuration["parallelism.default"] = str(args.parallelism)
    if args.job_name:
        configuration["pipeline.name"] = args.job_name
    if args.resume and args.resume_from:
        raise UsageError("%%flink_sql: --resume or --resume-from PATH, not both")
    return configuration


def _start_options_given(args: Any) -> bool:
    """True when a start option other than its default was given."""
    return args.name is not None or any(
        getattr(args, f.name) != f.default for f in dataclasses.fields(StartOptions) if f.name != "name")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext sessioncluster``: register ``%flink_session`` and ``%%flink_sql``."""
    ipython.register_magics(SessionClusterMagics(ipython))
