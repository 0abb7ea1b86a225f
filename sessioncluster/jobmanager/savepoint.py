"""Savepoints of STREAMING jobs: self-contained directories that survive the session.

Layout of a savepoint directory (``savepoint-<job id prefix>-<time>`` under the directory the
user names, as Flink names its own)::

    _metadata.json        the manifest: format, job, time, the stateful operators by uid,
                          and for each query (its sinks) its uids and its latest batch
    queries/<query key>/  a copy of that query's Spark checkpoint: offsets, commit log,
                          source positions and the state store (RocksDB) of its operators
    feeds/<feed key>/     a copy of a feeding query's directory (:class:`Feed`: the query of
                          an updating Table read by a DataStream): its checkpoint, its
                          changelog state, and the files of its outbox

A restore copies ``queries/*`` to the new job's checkpoint location, so each query resumes
from its offsets with its state. State is matched by operator ``uid()``: every stateful
operator of the restored program needs one, and state of a uid no operator claims fails the
restore unless ``execution.savepoint.ignore-unclaimed-state`` is set.

A feed's outbox is read by the job's queries as a file stream, whose checkpoint names each
file it read by its absolute path (and Spark reads the last batch's files again when a query
starts). A restore puts the outbox into the new job's directory and rewrites those paths in the
restored queries' checkpoints to the new place: the files read before stay read, those not read
yet (written by the feed after the queries' last batch) are read once.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol, Sequence

from ..api.formats.base import local_path
from ..common.checkpoints import (
    is_retained_checkpoint,
    latest_committed_batch,
    rebase_file_source_reads,
)
from ..graph.jobgraph import JobGraph
from ..spark.stages import GENERATED_UID_PREFIX
from ..spark.streaming import StreamQuery

MANIFEST = "_metadata.json"
FORMAT = "sessioncluster-savepoint-1"


class SavepointError(ValueError):
    """A savepoint that cannot be written or restored, with the reason."""


class Feed(Protocol):
    """A query of the job beside its :class:`StreamQuery` s that feeds them: its directory
    (``<checkpoint dir>/<key>``, its Spark checkpoint and state) has an ``outbox``
    subdirectory of files the job's queries read as a file stream."""

    key: str
    outbox: str


@dataclass(slots=True)
class RestoredSavepoint:
    checkpoint_id: int
    created_ms: int
    state_size: int


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _restore_feed(feed: Feed, source: Path, checkpoint_dir: Path, readers: list[Path]) -> None:
    """A feed's saved directory into the new job's checkpoint directory, and the files of its
    outbox that the restored queries (their checkpoints ``readers``) read, moved there."""
    target = checkpoint_dir / feed.key
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    outbox = target / feed.outbox

    def moved(path: Path) -> Path | None:
        if path.parent.name == feed.outbox and path.parent.parent.name == feed.key \
                and path.parent != outbox:
            return outbox / path.name
        return None

    for reader in readers:
        rebase_file_source_reads(reader, moved)


def write(directory: Path, job_id: str, graph: JobGraph, queries: list[StreamQuery],
          checkpoint_dir: Path, checkpoint_id: int, feeds: Sequence[Feed] = ()) -> Path:
    """Copy the (stopped) queries' checkpoints, their feeds, and a manifest into a new
    savepoint directory under ``directory``; returns it."""
    directory = Path(local_path(str(directory))).expanduser().absolute()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SavepointError(f"cannot create the savepoint directory {directory}: "
                             f"{exc.strerror or exc}") from None
    target = directory / f"savepoint-{job_id[:6]}-{time.strftime('%Y%m%d-%H%M%S')}-{checkpoint_id}"
    staging = target.with_name(target.name + ".inprogress")
    shutil.rmtree(staging, ignore_errors=True)
    saved = {}
    for query in queries:
        source = checkpoint_dir / query.key
        if source.exists():
            shutil.copytree(source, staging / "queries" / query.key)
        saved[query.key] = {"sink": query.name, "stateful_uids": query.stateful_uids,
                            "stateful_operators": query.stateful_names,
                            "batches": latest_committed_batch(source)}
    fed = {}
    for feed in feeds:
        source = checkpoint_dir / feed.key
        if source.exists():
            shutil.copytree(source, staging / "feeds" / feed.key)
        fed[feed.key] = {"batches": latest_committed_batch(source)}
    operators = [{"uid": op.uid, "name": op.name, "vertex": v.name}
                 for v in graph.vertices for op in v.operators if op.uid]
    manifest = {"format": FORMAT, "job_id": job_id, "job_name": graph.job_name,
                "created_ms": int(time.time() * 1000), "checkpoint_id": checkpoint_id,
                "operators": operators, "queries": saved, "feeds": fed}
    staging.mkdir(parents=True, exist_ok=True)
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
    staging.rename(target)  # the savepoint appears whole, or not at all
    return target


def read_manifest(path: Path) -> dict:
    if not path.exists():
        raise SavepointError(f"the savepoint path {path} does not exist")
    manifest = path / MANIFEST
    if not path.is_dir() or not manifest.exists():
        raise SavepointError(f"{path} is not a savepoint: it has no {MANIFEST} "
                             "(give the directory a savepoint was written to: savepoint-...)")
    try:
        data = json.loads(manifest.read_text())
    except ValueError as exc:
        raise SavepointError(f"{manifest} is not a savepoint manifest: {exc}") from None
    if data.get("format") != FORMAT:
        raise SavepointError(f"{path} is not a sessioncluster savepoint (format {data.get('format')!r})")
    return data


def restore(path: Path, queries: list[StreamQuery], checkpoint_dir: Path,
            ignore_unclaimed: bool, feeds: Sequence[Feed] = ()) -> RestoredSavepoint:
    """Place the savepoint's state into the new job's checkpoint location, by uid (a retained
    checkpoint, a job's checkpoint directory, by query key); a feed's by its key."""
    if not (path / MANIFEST).exists() and is_retained_checkpoint(path):
        return _restore_checkpoint(path, queries, checkpoint_dir, feeds)
    data = read_manifest(path)
    saved_queries = data["queries"]
    by_uids = {tuple(q["stateful_uids"]): key for key, q in saved_queries.items() if q["stateful_uids"]}
    # a query resumes from the saved query with the same stateful operators (or, with no
    # state, the same key): its offsets and its state belong together, and Spark restores a
    # query's state as a whole
    placed = {q.key: by_uids.get(tuple(q.stateful_uids)) if q.stateful_uids else q.key
              for q in queries}
    claimed = {uid for q in queries if placed[q.key] for uid in q.stateful_uids}
    saved = {uid for q in saved_queries.values() for uid in q["stateful_uids"] if uid}
    unclaimed = sorted(saved - claimed)
    lost_feeds = sorted(set(data.get("feeds", {})) - {f.key for f in feeds})
    if lost_feeds and not ignore_unclaimed:
        raise SavepointError(
            f"the savepoint {path} has the state of a Table's query ({', '.join(lost_feeds)}) "
            "that no Table source of this program takes (its query or its place in the program "
            "changed); set execution.savepoint.ignore-unclaimed-state to true to start without it")
    if unclaimed and not ignore_unclaimed:
        wanted = {uid for q in queries for uid in q.stateful_uids}
        moved = [uid for uid in unclaimed if uid in wanted]
        why = (f"; {', '.join(map(repr, moved))} now sit(s) in a query with other stateful "
               "operators than when saved (their sinks share different upstream operators): a "
               "streaming query's state is restored as a whole" if moved else "")
        names = {uid: name for q in saved_queries.values()
                 for uid, name in zip(q["stateful_uids"], q.get("stateful_operators", []))}
        raise SavepointError(
            f"the savepoint {path} has state for operator uid(s) "
            f"{', '.join(map(partial(_described, names), unclaimed))} that no operator of this "
            f"program can take{why}; set execution.savepoint.ignore-unclaimed-state to true to "
            "start without it")
    for query in queries:
        key = placed[query.key]
        if key is None or key not in saved_queries:
            continue
        source = path / "queries" / key
        if source.exists():
            target = checkpoint_dir / query.key
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
    readers = [checkpoint_dir / q.key for q in queries if placed[q.key]]
    for feed in feeds:
        if feed.key in data.get("feeds", {}) and (path / "feeds" / feed.key).exists():
            _restore_feed(feed, path / "feeds" / feed.key, checkpoint_dir, readers)
    return RestoredSavepoint(int(data.get("checkpoint_id") or 0), int(data.get("created_ms") or 0),
                             _size(path))


def _described(names: dict[str, str], uid: str) -> str:
    """A uid as the restore's error names it: a generated one with its operator's name."""
    if uid.startswith(GENERATED_UID_PREFIX) and uid in names:
        return (f"{uid!r} (generated for '{names[uid]}', which had no uid(): the program up to "
                "it changed; give stateful operators a uid() to keep their state across changes)")
    return repr(uid)


def _restore_checkpoint(path: Path, queries: list[StreamQuery], checkpoint_dir: Path,
                        feeds: Sequence[Feed]) -> RestoredSavepoint:
    """A retained checkpoint into the new job's checkpoint location: each query's and feed's
    by its key (the same program: no manifest to match uids by)."""
    restored = [q.key for q in queries if (path / q.key).is_dir()]
    if not restored:
        raise SavepointError(f"the checkpoint {path} has no query of this job "
                             f"({', '.join(q.key for q in queries)})")
    for key in restored:
        target = checkpoint_dir / key
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(path / key, target)
    for feed in feeds:
        if (path / feed.key).is_dir():
            _restore_feed(feed, path / feed.key, checkpoint_dir,
                          [checkpoint_dir / key for key in restored])
    batches = [b for key in restored if (b := latest_committed_batch(path / key)) is not None]
    return RestoredSavepoint(max(batches, default=0), int(path.stat().st_mtime * 1000),
                             _size(path))
