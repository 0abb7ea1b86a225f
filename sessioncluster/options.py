"""The options of a session cluster's start, declared once.

The one declaration, :class:`StartOptions`, feeds ``sessioncluster start`` (the CLI),
``%flink_session start`` (the magics), ``sessioncluster.start(**options)`` and the JobManager's
own command line (``python -m sessioncluster.jobmanager``), so the four cannot drift apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

#: the default session name
DEFAULT_NAME = "default"


def _option(help: str, metavar: str | None = None, type: Callable[[str], Any] | None = None) -> Any:
    return {"help": help, "metavar": metavar, "type": type}


@dataclass(frozen=True, slots=True)
class StartOptions:
    """How a session cluster is started; every field is a ``--flag`` of the same name."""

    name: str = field(default=DEFAULT_NAME, metadata=_option(
        "session name; a running session of that name is connected to", "N"))
    taskmanagers: int = field(default=2, metadata=_option(
        "TaskManagers = Spark executors (on local-cluster, or on --spark-master's cluster); 0 "
        "runs Spark in local[S], the fastest start", "T"))
    slots: int = field(default=1, metadata=_option("slots per TaskManager", "S"))
    memory: int = field(default=1024, metadata=_option("MB of memory per TaskManager", "MB"))
    spark_master: str | None = field(default=None, metadata=_option(
        "a real Spark master (spark://host:7077, yarn, k8s://...) instead of local-cluster",
        "URL", str))
    parallelism: int | None = field(default=None, metadata=_option(
        "default parallelism of the session's jobs (Flink's parallelism.default); default: "
        "every slot at start, TaskManagers x slots", "P", int))
    task_attempts: int = field(default=2, metadata=_option(
        "attempts per task before a job fails", "N"))
    heartbeat_interval: int = field(default=10000, metadata=_option(
        "ms between a TaskManager's heartbeats when nothing changes (Flink's heartbeat.interval); "
        "at most a fifth of --heartbeat-timeout. Task events and the library cache's figures go "
        "out at once", "MS"))
    heartbeat_timeout: int = field(default=50000, metadata=_option(
        "ms without a heartbeat after which a TaskManager is lost and its subtasks fail over "
        "(Flink's heartbeat.timeout)", "MS"))
    bind: str = field(default="127.0.0.1", metadata=_option(
        "the address every socket binds; any other than loopback needs an explicit key of 32+ "
        "characters in SESSIONCLUSTER_KEY", "ADDRESS"))
    max_result_mb: int = field(default=256, metadata=_option(
        "the largest result (MB) a job may collect into the JobManager", "MB"))
    py_files: str | None = field(default=None, metadata=_option(
        "Python files, package directories or zips (comma-separated) on the path of every job "
        "of the session (PyFlink's python.files)", "PATHS", str))
    requirements: str | None = field(default=None, metadata=_option(
        "a requirements file pip installs on each TaskManager for every job of the session "
        "(PyFlink's python.requirements)", "FILE", str))
    result_store_mb: int = field(default=256, metadata=_option(
        "the finished jobs' collected records (MB in all) kept on disk to be read back later; "
        "the oldest are evicted first", "MB"))
    ha: str | None = field(default=None, metadata=_option(
        "high availability: 'file' (leader lock and job graphs in the session directory) or "
        "'zookeeper' (with --zookeeper-quorum); standbys join with 'sessioncluster "
        "start-standby NAME'", "BACKEND", str))
    zookeeper_quorum: str | None = field(default=None, metadata=_option(
        "ZooKeeper's HOST:PORT[,HOST:PORT...] for --ha zookeeper", "HOSTS", str))
    class_data_sharing: bool = field(default=True, metadata=_option(
        "start Spark's JVMs from a class-data-sharing archive of Spark's classes, made once per "
        "machine by the first session (in ~/.cache/sessioncluster/cds); "
        "--no-class-data-sharing starts them without"))

    def __post_init__(self) -> None:
        for name in ("taskmanagers", "slots", "memory", "task_attempts", "max_result_mb",
                     "result_store_mb", "heartbeat_interval", "heartbeat_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (0 if name == "taskmanagers" else 1):
                raise ValueError(f"{name} must be a whole number >= "
                                 f"{0 if name == 'taskmanagers' else 1}, not {value!r}")
        if self.spark_master and not self.spark_master.startswith("local") \
                and self.taskmanagers < 1:
            raise ValueError("taskmanagers must be >= 1 on a Spark cluster (--spark-master): "
                             "each TaskManager is one executor of --slots cores")
        # the JobManager runs elsewhere: relative paths are the caller's, made absolute here
        if isinstance(self.py_files, (list, tuple)):
            object.__setattr__(self, "py_files", ",".join(map(str, self.py_files)))
        if self.py_files:
            object.__setattr__(self, "py_files", ",".join(
                os.path.abspath(os.path.expanduser(p.strip())) for p in self.py_files.split(",")
                if p.strip()))
        if self.requirements:
            object.__setattr__(self, "requirements",
                               os.path.abspath(os.path.expanduser(str(self.requirements))))
        for path in [*(self.py_files or "").split(","), self.requirements or ""]:
            if path and not os.path.exists(path):
                raise ValueError(f"{path} does not exist (--py-files / --requirements)")
        if self.ha in ("", "none"):
            object.__setattr__(self, "ha", None)
        if self.ha is not None and self.ha not in ("file", "zookeeper"):
            raise ValueError(f"ha must be 'file' or 'zookeeper', not {self.ha!r}")
        if self.ha == "zookeeper" and not self.zookeeper_quorum:
            raise ValueError("--ha zookeeper needs --zookeeper-quorum HOST:PORT[,HOST:PORT...]")
        if self.zookeeper_quorum and self.ha != "zookeeper":
            raise ValueError("--zookeeper-quorum is for --ha zookeeper")
        if not isinstance(self.class_data_sharing, bool):
            raise ValueError(f"class_data_sharing must be True or False, not "
                             f"{self.class_data_sharing!r}")
        if self.parallelism is not None and (not isinstance(self.parallelism, int)
                                             or self.parallelism < 1):
            raise ValueError(f"parallelism must be a whole number >= 1, not {self.parallelism!r}")

    @property
    def master_url(self) -> str:
        """The Spark master the JobManager's driver uses."""
        if self.spark_master:
            return self.spark_master
        if self.taskmanagers == 0:
            return f"local[{self.slots},{self.task_attempts}]"
        return f"local-cluster[{self.taskmanagers},{self.slots},{self.memory}]"

    @property
    def expected_taskmanagers(self) -> int:
        """How many TaskManagers must register before the session is ready."""
        return self.taskmanagers if self.taskmanagers > 0 or self.spark_master else 1

    @property
    def default_parallelism(self) -> int:
        """The jobs' default parallelism: as given, else every slot of the session at start."""
        return self.parallelism or max(self.taskmanagers, 1) * self.slots

    # -- the four front ends ----------------------------------------------------------------
    @classmethod
    def flags(cls) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each option as an argparse flag and its keyword arguments."""
        for f in dataclasses.fields(cls):
            meta = f.metadata
            kind = meta["type"] or type(f.default)
            default = f"default: {f.default}" if f.default is not None else ""
            text = f"{meta['help']} ({default})" if default else meta["help"]
            if kind is bool:  # --flag / --no-flag
                yield "--" + f.name.replace("_", "-"), {
                    "dest": f.name, "action": argparse.BooleanOptionalAction,
                    "default": f.default, "help": text.replace("%", "%%")}
                continue
            yield "--" + f.name.replace("_", "-"), {
                "dest": f.name, "type": kind, "default": f.default, "metavar": meta["metavar"],
                "help": text.replace("%", "%%")}

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser, name_default: Any = DEFAULT_NAME) -> None:
        """Add every option to an argparse parser (``name_default`` for ``--name``)."""
        group = parser.add_argument_group("start options")
        for flag, kwargs in cls.flags():
            if kwargs["dest"] == "name":
                kwargs = {**kwargs, "default": name_default}
            group.add_argument(flag, **kwargs)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace, **override: Any) -> "StartOptions":
        """The options parsed by a parser that :meth:`add_arguments` filled."""
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)}
        values.update(override)
        return cls(**values)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> "StartOptions":
        """The options given to ``sessioncluster.start``; an unknown one is a TypeError that
        lists the known ones."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown start option(s) {', '.join(unknown)}; the options are "
                            f"{', '.join(sorted(known))}")
        return cls(**kwargs)

    def argv(self) -> list[str]:
        """The JobManager's command-line arguments for these options."""
        out: list[str] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            flag = f.name.replace("_", "-")
            if isinstance(value, bool):
                out.append(f"--{flag}" if value else f"--no-{flag}")
            elif value is not None:
                out += [f"--{flag}", str(value)]
        return out


def names() -> set[str]:
    """Every start option's name."""
    return {f.name for f in dataclasses.fields(StartOptions)}
