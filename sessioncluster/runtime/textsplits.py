"""``read_text_file`` in BATCH mode: local text files cut into byte ranges, one contiguous share
per source subtask, each range read by its subtask straight from the file (as Flink's
TextInputFormat reads its input splits), instead of Spark reading the lines in its JVM and
handing each one to Python over pyspark's framed socket protocol: that hand-over was a third of
a text-reading job's Python time.

A range owns the lines that *start* in it (Hadoop's and Flink's rule for a line across a split
boundary): a reader seeks to the byte before its start and skips to the end of that line, then
reads until the line that ends at or after its end. Lines end with ``\\n``; one ``\\r`` before it
is dropped (Flink's TextInputFormat with its default delimiter); the text is UTF-8.

Paths Spark must read (a URI such as ``hdfs://``), compressed files, and a directory with
subdirectories are left to Spark's ``textFile`` (:func:`plan` gives None).
"""

from __future__ import annotations

import glob
import os
from typing import Iterator

#: the suffixes of the compressed files Spark's textFile decompresses
COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".snappy", ".deflate")
#: bytes read at a time
CHUNK = 1 << 22

Split = tuple[str, int, int]


def plan(path_spec: str, parallelism: int) -> list[list[Split]] | None:
    """The byte ranges each of ``parallelism`` subtasks reads, in file order: the files' bytes
    cut into equal contiguous shares. ``path_spec`` is ``read_text_file``'s path (comma-separated
    paths, each a file, a directory of files or a glob). None when Spark has to read it."""
    files = _local_files(path_spec)
    if files is None:
        return None
    sizes = [(f, os.path.getsize(f)) for f in files]
    total = sum(size for _, size in sizes)
    shares: list[list[Split]] = [[] for _ in range(parallelism)]
    offset = 0  # of the file's first byte in all the files' bytes
    for f, size in sizes:
        for i in range(parallelism):
            lo, hi = total * i // parallelism, total * (i + 1) // parallelism
            start, end = max(lo - offset, 0), min(hi - offset, size)
            if start < end:
                shares[i].append((f, start, end))
        offset += size
    return shares


def _local_files(path_spec: str) -> list[str] | None:
    files: list[str] = []
    for p in (p for p in path_spec.split(",") if p):
        if p.startswith("file://"):
            p = p[len("file://"):]
        if "://" in p:
            return None
        matches = sorted(glob.glob(p)) if glob.has_magic(p) else [p]
        if not matches:
            return None  # Spark's error names the pattern
        for m in matches:
            if os.path.isdir(m):
                entries = sorted(e for e in os.listdir(m) if not e.startswith((".", "_")))
                if any(os.path.isdir(os.path.join(m, e)) for e in entries):
                    return None
                files.extend(os.path.join(m, e) for e in entries)
            elif os.path.isfile(m):
                files.append(m)
            else:
                raise FileNotFoundError(f"Input path does not exist: {m}")
    if any(f.endswith(COMPRESSED) for f in files):
        return None
    return files


def read_split(path: str, start: int, end: int) -> Iterator[str]:
    """The lines that start in bytes ``[start, end)`` of ``path``, without their line ends."""
    with open(path, "rb") as f:
        pos = start
        if start > 0:
            f.seek(start - 1)
            pos = start - 1 + len(f.readline())  # that line started before ``start``
        buf = b""
        while pos < end:
            data = f.read(CHUNK)
            if not data:  # the last line, without a line end
                if buf:
                    yield from _lines(buf, path)
                return
            buf += data
            # the line holding byte ``end - 1`` is the last one this range owns
            last = buf.find(b"\n", end - 1 - pos) if pos + len(buf) >= end else -1
            if last >= 0:
                yield from _lines(buf[:last], path)
                return
            cut = buf.rfind(b"\n")
            if cut >= 0:
                yield from _lines(buf[:cut], path)
                pos += cut + 1
                buf = buf[cut + 1:]


def _lines(block: bytes, path: str) -> list[str]:
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text: {e}") from None
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines
