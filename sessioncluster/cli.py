"""``sessioncluster start|stop|status|list|jobs|cancel|savepoint|stop-job|run|demo``: the
session cluster from a shell. The job commands go through the session's REST API, as Flink's
CLI does.

Examples::

    sessioncluster start --name dev --taskmanagers 2 --slots 1
    sessioncluster status dev
    sessioncluster list-jobs dev --running
    sessioncluster cancel dev 5e20cb6b0f357591171dfcca2eea09de
    sessioncluster savepoint dev 5e20cb6b0f357591171dfcca2eea09de /tmp/savepoints
    sessioncluster stop-job dev 5e20cb6b0f357591171dfcca2eea09de --savepoint /tmp/savepoints
    sessioncluster stop dev
    sessioncluster demo            # start, run a word count, print result and graph, stop
    sessioncluster run --session dev word_count.py          # on a running session
    sessioncluster run -t per-job word_count.py             # on a cluster of its own, then stop it
    sessioncluster run -t application -d word_count.py      # main runs in the JobManager
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
import time
from pathlib import Path
from typing import Any

from .client.restclient import RestClient, RestError
from .client.run import TARGETS, cmd_run, format_application
from .client.session import Session, connect, start, start_standby
from .client.sqlclient import SqlClient, SqlGatewayClient
from .client.text import format_execution_graph, format_overview
from .cluster.appstatus import ended_applications, read_status
from .cluster.connection import home, pid_alive, session_dir
from .cluster.leader import standby_pids
from .options import StartOptions


def _session_names() -> list[str]:
    d = home() / "sessions"
    return sorted(p.parent.name for p in d.glob("*/connection.json")) if d.exists() else []


def cmd_start(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    options = StartOptions.from_namespace(args)
    session = start(**dataclasses.asdict(options))
    print(format_overview(session.status(), session.info))
    print(f"ready in {time.monotonic() - t0:.1f} s")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    application = read_status(session_dir(args.name))
    try:
        session = connect(args.name)
    except LookupError:
        if application is None:
            raise
        print(f"cluster '{args.name}' is not running")  # an application cluster that ended
        if not application.state.is_terminal:
            print(f"application {application.program}: its JobManager ended before main did, "
                  f"without an outcome (see {session_dir(args.name) / 'jobmanager.log'})")
            return 1
        print(format_application(args.name, application))
        return 0
    print(format_overview(session.status(), session.info))
    if session.info.ha:
        standbys = [pid for pid in standby_pids(args.name) if pid != session.info.jobmanager_pid]
        print(f"high availability: {session.info.ha}"
              + (f" ({session.info.zookeeper_quorum})" if session.info.zookeeper_quorum else "")
              + f", leader epoch {session.info.epoch}, standby JobManagers: "
              + (", ".join(f"pid {p}" for p in standbys) or "none"))
    if application is not None:
        print(format_application(args.name, application))
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    session = connect(args.name)
    pid = session.info.jobmanager_pid
    session.stop()
    print(f"stopped session '{args.name}' (JobManager pid {pid} {'alive!' if pid_alive(pid) else 'gone'})")
    return 0


def cmd_start_standby(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    pid = start_standby(args.name)
    print(f"standby JobManager pid {pid} of session '{args.name}' is warm "
          f"(in {time.monotonic() - t0:.1f} s); it takes over if the leader dies")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    names = _session_names()
    for name in names:
        try:
            s = connect(name)
            print(f"{name}  JobManager pid {s.info.jobmanager_pid}  {s.info.dispatcher}")
        except LookupError as exc:
            print(f"{name}  (stale: {exc})")
    ended = ended_applications(home() / "sessions")
    for name in ended:
        app = read_status(home() / "sessions" / name)
        if app is not None:
            print(f"{name}  ended: application {app.program} {app.state.value}")
    if not names and not ended:
        print("no session clusters")
    return 0


def format_rest_jobs(jobs: list[dict[str, Any]]) -> str:
    """``/jobs/overview`` entries as lines: id, state, start, duration, subtasks, name."""
    if not jobs:
        return "no jobs"
    out = []
    for j in jobs:
        started = datetime.datetime.fromtimestamp(j["start-time"] / 1000).strftime("%H:%M:%S")
        took = f"{j['duration']} ms" if j.get("end-time", -1) > 0 else "running"
        tasks = j.get("tasks", {})
        out.append(f"{j['jid']}  {j['state']:<10} {started}  {took:>10}  "
                   f"{tasks.get('finished', 0)}/{tasks.get('total', 0)} subtasks  {j['name']}")
    return "\n".join(out)


def cmd_jobs(args: argparse.Namespace) -> int:
    """List a session's jobs (Flink's ``flink list``), newest first, from ``/jobs/overview``."""
    jobs = RestClient.of(connect(args.name)).jobs()
    if args.running:
        jobs = [j for j in jobs if j["state"] not in ("FINISHED", "CANCELED", "FAILED")]
    print(format_rest_jobs(jobs))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel a job (Flink's ``flink cancel``): ``PATCH /jobs/:id?mode=cancel``."""
    try:
        RestClient.of(connect(args.name)).cancel(args.job_id)
    except RestError as exc:
        print(f"cancel of job {args.job_id} failed: {'; '.join(exc.errors)}", file=sys.stderr)
        return 1
    print(f"Cancelled job {args.job_id}.")
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    """Print the dashboard's link (it carries the session's REST token: keep it to yourself),
    and open it in a browser with ``--open``."""
    url = connect(args.name).dashboard_url
    print(url)
    if args.open:
        import webbrowser

        webbrowser.open(url)
    return 0


DEMO_TEXT = """\
A session cluster keeps a JobManager and warm TaskManagers running
so that every short query runs on processes that are already up
the JobManager turns each program into a JobGraph and an ExecutionGraph
and the TaskManagers run the subtasks on Spark executors
"""


def _tokenize(line: str) -> list[str]:
    return line.lower().split()


def run_demo(session: Session) -> None:
    env = session.get_execution_environment()
    env.set_parallelism(2)
    words = (env.from_collection(DEMO_TEXT.splitlines()).name("lines")
             .flat_map(_tokenize).name("tokenize")
             .map(lambda w: (w, 1)).name("pair")
             .key_by(lambda t: t[0])
             .sum(1).name("count"))
    t0 = time.perf_counter()
    client = words.execute_and_collect_async("demo word count")
    counts = client.collect()
    took = time.perf_counter() - t0
    top = sorted(counts, key=lambda t: (-t[1], t[0]))[:8]
    print(f"\nword count: {len(counts)} distinct words in {took * 1000:.0f} ms; the most frequent:")
    for word, n in top:
        print(f"  {word:<14} {n}")
    details = client.details()
    print()
    print(details.job_graph.explain())
    print()
    print(format_execution_graph(details))


def cmd_savepoint(args: argparse.Namespace) -> int:
    """Take a savepoint of a running STREAMING job (Flink's ``flink savepoint``), or stop it with
    one (``flink stop --savepointPath``), through ``POST /jobs/:id/savepoints`` or ``/stop``."""
    rest = RestClient.of(connect(args.name))
    stop = args.command == "stop-job"
    target = args.stop_savepoint if stop else args.directory
    try:
        location = rest.savepoint(args.job_id, target, stop=stop)
    except RestError as exc:
        print(f"savepoint of job {args.job_id} failed: {'; '.join(exc.errors)}", file=sys.stderr)
        return 1
    print(f"Savepoint completed. Path: {location}")
    if stop:
        print(f"Job {args.job_id} stopped.")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    try:
        session = connect(args.name)
        started = False
    except LookupError:
        print(f"starting session cluster '{args.name}' ({args.taskmanagers} TaskManagers) ...")
        t0 = time.monotonic()
        session = start(**dataclasses.asdict(StartOptions.from_namespace(args)))
        print(f"ready in {time.monotonic() - t0:.1f} s")
        started = True
    print(format_overview(session.status(), session.info))
    try:
        run_demo(session)
    finally:
        if started and not args.keep:
            session.stop()
            print(f"\nstopped session '{args.name}'")
    return 0


def cmd_sql_client(args: argparse.Namespace) -> int:
    """Flink's SQL Client in gateway mode (tableau results) on a session's SQL Gateway."""
    properties = {}
    for item in args.define or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            print(f"-D {item!r}: key=value is expected", file=sys.stderr)
            return 2
        properties[key.strip()] = value.strip()
    client = SqlGatewayClient(RestClient.of(connect(args.name)), properties,
                              reconnect=lambda: RestClient.of(connect(args.name)))
    cli = SqlClient(client)
    try:
        if args.init is not None and not cli.run_script(Path(args.init).read_text(), echo=False):
            return 1
        if args.file is not None:
            return 0 if cli.run_script(Path(args.file).read_text()) else 1
        cli.interactive()
        print("Shutting down the session...\ndone.")
        return 0
    finally:
        client.close()


def build_parser() -> argparse.ArgumentParser:
    """The ``sessioncluster`` command line and its subcommands."""
    parser = argparse.ArgumentParser(prog="sessioncluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", help="start a session cluster in the background")
    StartOptions.add_arguments(p)
    p.set_defaults(func=cmd_start)
    for name, func, text in (("status", cmd_status, "show a session's TaskManagers and jobs"),
                             ("stop", cmd_stop, "stop a session cluster")):
        p = sub.add_parser(name, help=text)
        p.add_argument("name", nargs="?", default="default")
        p.set_defaults(func=func)
    p = sub.add_parser("start-standby", help="start a standby JobManager for an HA session "
                       "(started with --ha file|zookeeper)")
    p.add_argument("name", nargs="?", default="default")
    p.set_defaults(func=cmd_start_standby)
    p = sub.add_parser("list-jobs", aliases=["jobs"], help="list a session's jobs (REST API)")
    p.add_argument("name", nargs="?", default="default")
    p.add_argument("-r", "--running", action="store_true", help="only the jobs not yet ended")
    p.set_defaults(func=cmd_jobs)
    p = sub.add_parser("cancel", help="cancel a job (REST API)")
    p.add_argument("name", help="the session")
    p.add_argument("job_id")
    p.set_defaults(func=cmd_cancel)
    p = sub.add_parser("savepoint", help="take a savepoint of a running STREAMING job")
    p.add_argument("name", help="the session")
    p.add_argument("job_id")
    p.add_argument("directory", nargs="?", default=None,
                   help="where the savepoint goes (default: the session's savepoints directory)")
    p.set_defaults(func=cmd_savepoint, stop_savepoint=None)
    p = sub.add_parser("stop-job", help="stop a STREAMING job with a savepoint")
    p.add_argument("name", help="the session")
    p.add_argument("job_id")
    p.add_argument("--savepoint", "-p", dest="stop_savepoint", default=None, metavar="DIR",
                   help="where the savepoint goes (default: the session's savepoints directory)")
    p.set_defaults(func=cmd_savepoint, directory=None)
    p = sub.add_parser("dashboard", help="print the link to a session's web dashboard")
    p.add_argument("name", nargs="?", default="default")
    p.add_argument("--open", action="store_true", help="open it in a web browser")
    p.set_defaults(func=cmd_dashboard)
    p = sub.add_parser("list", help="list the session clusters")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("demo", help="start a session, run a word count, print result and graph")
    StartOptions.add_arguments(p)
    p.set_defaults(name="demo")
    p.add_argument("--keep", action="store_true", help="leave the session running afterwards")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("sql-client", help="Flink's SQL Client on a session (its SQL Gateway)",
                       description="Flink SQL on a session, as Flink's 'sql-client.sh gateway': "
                       "the statements of a script (-f) or typed at 'Flink SQL>', results in "
                       "Flink's tableau layout.")
    p.add_argument("name", nargs="?", default="default", help="the session")
    p.add_argument("-f", "--file", default=None, help="run this script's statements and exit "
                   "(at the first that fails, with status 1)")
    p.add_argument("-i", "--init", default=None, help="a script that sets the session up first")
    p.add_argument("-D", dest="define", action="append", metavar="KEY=VALUE",
                   help="a session property (execution.runtime-mode=batch, ...)")
    p.set_defaults(func=cmd_sql_client)
    _add_run(sub)
    return parser


def _add_run(sub: Any) -> None:
    """``run``: a PyFlink program (Flink's ``flink run -py``, ``-t per-job``, ``run-application``)."""
    p = sub.add_parser(
        "run", help="run a PyFlink DataStream program on a session, or on a cluster of its own",
        description="Run a PyFlink DataStream program (Flink's 'flink run -py'). --target "
        "session (the default) runs it here on a running session; per-job starts a cluster for "
        "it, runs it here, and stops the cluster when it ends; application starts a cluster, "
        "uploads the program and runs its main in the JobManager, and the cluster stops when "
        "main ends.")
    p.add_argument("-t", "--target", choices=TARGETS, default="session",
                   help="where the program runs (default: session)")
    p.add_argument("--session", default=None,
                   help="--target session: the session to run on (default: $SESSIONCLUSTER_SESSION)")
    p.add_argument("-d", "--detached", action="store_true",
                   help="session: print the JobIDs of the program's jobs and return without "
                   "waiting; application: return once main runs")
    p.add_argument("-s", "--fromSavepoint", dest="from_savepoint", default=None, metavar="DIR",
                   help="restore the program's STREAMING jobs from this savepoint")
    p.add_argument("-D", dest="properties", action="append", default=[], metavar="KEY=VALUE",
                   help="a configuration property of the program's environments, as Flink's "
                   "(e.g. -Dexecution.runtime-mode=STREAMING, -Dparallelism.default=2); session "
                   "and per-job")
    p.add_argument("-n", "--allowNonRestoredState", dest="allow_non_restored_state",
                   action="store_true", help="drop savepoint state that no operator claims")
    group = p.add_argument_group("cluster options (--target per-job and application; as on "
                                 "'sessioncluster start')")
    for flag, kwargs in StartOptions.flags():
        if kwargs["dest"] == "name":
            kwargs = {**kwargs, "help": "the cluster's name (default: a new one, "
                      "per-job-<id> or application-<id>); not that of a running cluster"}
        group.add_argument(flag, **{**kwargs, "default": None})
    p.add_argument("program", help="the program (a .py file)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    p.set_defaults(func=cmd_run)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (LookupError, RuntimeError, ConnectionError, ValueError) as exc:
        print(f"sessioncluster {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
