"""Spark's checkpoint layout, as the JobManager, the FileSink and the notebook read it: a job's
checkpoint directory holds one directory per query, whose ``commits/<batch>`` files name the
micro-batches Spark has committed (it deletes the old ones)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


def latest_committed_batch(query_dir: Path) -> int | None:
    """The latest micro-batch committed under a query's checkpoint directory; None if none."""
    commits = query_dir / "commits"
    if not commits.is_dir():
        return None
    return max((int(p.name) for p in commits.iterdir() if p.name.isdigit()), default=None)


def committed_batches(query_dir: Path) -> Callable[[int], bool]:
    """Whether a micro-batch is committed under a query's checkpoint directory, as of now (Spark
    deletes old commit entries: a batch is committed when it is not after the latest one)."""
    latest = latest_committed_batch(query_dir)
    latest = -1 if latest is None else latest
    return lambda batch_id: batch_id <= latest


def is_retained_checkpoint(job_dir: Path) -> bool:
    """True for a job's checkpoint directory that kept a checkpoint (a committed micro-batch of
    one of its queries): Flink restores a retained checkpoint as it restores a savepoint."""
    return job_dir.is_dir() and any(
        latest_committed_batch(q) is not None for q in job_dir.iterdir() if q.is_dir())



def _source_logs(query_dir: Path) -> list[Path]:
    """The file-source logs of a query (``sources/<source>/<batch>[.compact]``: a version
    line, then one JSON entry per file read), without Spark's checksums and files in progress."""
    return [log for log in query_dir.glob("sources/*/*")
            if not log.name.startswith(".") and log.is_file()]


def rebase_file_source_reads(query_dir: Path, rebase: Callable[[Path], Path | None]) -> int:
    """Rewrite the paths of the files a query's file sources have read (``rebase(path)``: the
    new path, None to keep it), so that a restored query sees the files it read at their new
    place as read; Spark's checksum of a rewritten log is dropped (it reads a log without one).
    The number of entries rewritten."""
    import json
    from urllib.parse import unquote, urlparse

    moved = 0
    for log in _source_logs(query_dir):
        lines = log.read_text().splitlines()
        out = []
        for line in lines:
            if line.startswith("{"):
                entry = json.loads(line)
                target = rebase(Path(unquote(urlparse(entry["path"]).path)))
                if target is not None:
                    entry["path"] = target.absolute().as_uri()
                    line = json.dumps(entry, separators=(",", ":"))
                    moved += 1
            out.append(line)
        if out != lines:
            log.write_text("\n".join(out))
            (log.parent / f".{log.name}.crc").unlink(missing_ok=True)
    return moved
