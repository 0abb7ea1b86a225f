"""The ends of a STREAMING job's sources that Spark does not see: a socket whose peer closed
(Flink's socket source ends then; Spark's waits for more, forever), and a watched directory that
disappeared (Spark's file source would go on listing nothing)."""

from __future__ import annotations

import glob
import socket
from pathlib import Path

import psutil

from ..graph.jobgraph import JobGraph
from ..graph.streamgraph import OperatorKind
from ..spark.sources import socket_peers


class SocketPeers:
    """The peers of a job's socket sources, as the Spark driver's connections to them show.

    A connection seen once that is now CLOSE_WAIT (the peer closed, Spark did not) or gone
    means that source has ended."""

    def __init__(self, peers: list[tuple[str, int]]) -> None:
        self.peers = {(_resolve(host), port) for host, port in peers}
        self.seen: set[tuple[str, int]] = set()
        self.closed_checks = 0

    @classmethod
    def of(cls, graph: JobGraph) -> "SocketPeers | None":
        """The job's socket peers, or None when it has none or another unbounded source."""
        peers = socket_peers(graph)
        return cls(peers) if peers else None

    def all_closed(self) -> bool:
        open_now: set[tuple[str, int]] = set()
        for proc in psutil.Process().children(recursive=True):
            try:
                connections = proc.net_connections(kind="tcp")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            for c in connections:
                # a Java socket is often IPv6 with the IPv4 address mapped in
                peer = (c.raddr.ip.removeprefix("::ffff:"), c.raddr.port) if c.raddr else None
                if peer in self.peers:
                    self.seen.add(peer)  # connected, whether or not the peer has closed since
                    if c.status == psutil.CONN_ESTABLISHED:
                        open_now.add(peer)
        closed = self.seen == self.peers and not open_now
        # twice in a row: Spark's reader thread has read what the peer sent before closing
        self.closed_checks = self.closed_checks + 1 if closed else 0
        return self.closed_checks >= 2


def missing_source_directories(graph: JobGraph) -> list[str]:
    """The watched local directories (not globs) of ``graph``'s file sources that no longer
    exist."""
    paths = [p for v in graph.vertices if v.operators[0].kind is OperatorKind.SOURCE_TEXT_FILE
             for p in v.operators[0].config.get("path", "").split(",")
             if p and "://" not in p and not glob.has_magic(p)]
    return [p for p in paths if not Path(p).exists()]


def _resolve(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host
