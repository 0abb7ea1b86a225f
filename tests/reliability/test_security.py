"""Security on a real session: every listening socket of the session is on 127.0.0.1 by
default, and binding another address needs an explicit key and says so."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

import sessioncluster
from sessioncluster.client.session import SessionStartError
from sessioncluster.cluster.connection import ConnectionInfo, connection_path

from ..helpers import descendants, session_pids, wait_gone

pytestmark = pytest.mark.integration

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
LOOPBACK = ("127.0.0.1", "::1")


def listening_sockets(pids: set[int]) -> dict[tuple[str, int], int]:
    """(address, port) of every TCP socket in LISTEN state owned by ``pids`` -> its pid."""
    inode_pid: dict[str, int] = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inode_pid[target[8:-1]] = pid
        except OSError:
            continue
    found: dict[tuple[str, int], int] = {}
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and inode in inode_pid:
                found[(_address(local, v6), int(local.split(":")[1], 16))] = inode_pid[inode]
    return found


def _address(local: str, v6: bool) -> str:
    """'0100007F:1F90' -> '127.0.0.1' (the kernel writes each 32-bit word in host order)."""
    raw = bytes.fromhex(local.split(":")[0])
    if sys.byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    text = socket.inet_ntop(socket.AF_INET6 if v6 else socket.AF_INET, raw)
    return text.removeprefix("::ffff:")  # a JVM's IPv4 socket is an IPv4-mapped IPv6 one


def non_loopback_ipv4() -> str | None:
    """This machine's address on its default route, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        addr = s.getsockname()[0]
    return None if addr.startswith("127.") else addr


def test_every_listening_socket_of_the_session_is_on_loopback(session) -> None:
    pids = descendants(session_pids(session))
    sockets = listening_sockets(pids)
    info = session.info
    jm_ports = {int(e.rsplit(":", 1)[1]) for e in (info.dispatcher, info.resourcemanager, info.events)}
    assert {("127.0.0.1", port) for port in jm_ports} <= set(sockets), sockets
    public = {s: pid for s, pid in sockets.items() if s[0] not in LOOPBACK}
    assert not public, f"sockets of the session listen beyond loopback: {public}"
    # the Spark driver and both executor JVMs were looked at too, not only the JobManager
    assert len(set(sockets.values())) >= 3, sockets


def test_non_loopback_bind_without_a_key_is_refused(sc_home: Path, monkeypatch) -> None:
    monkeypatch.delenv("SESSIONCLUSTER_KEY", raising=False)
    with pytest.raises(SessionStartError, match="SESSIONCLUSTER_KEY"):
        sessioncluster.start("public-nokey", taskmanagers=0, bind="0.0.0.0", quiet=True)
    assert not connection_path("public-nokey").exists()


def test_a_weak_key_is_refused(sc_home: Path, monkeypatch) -> None:
    monkeypatch.setenv("SESSIONCLUSTER_KEY", "secret")
    with pytest.raises(SessionStartError, match="at least 32"):
        sessioncluster.start("public-weak", taskmanagers=0, bind="0.0.0.0", quiet=True)


def test_non_loopback_bind_with_a_key(sc_home: Path, monkeypatch) -> None:
    address = non_loopback_ipv4()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    key = os.urandom(32).hex()
    monkeypatch.setenv("SESSIONCLUSTER_KEY", key)
    name = "public"
    session = sessioncluster.start(name, taskmanagers=0, slots=2, bind=address, quiet=True)
    pids = descendants(session_pids(session))
    try:
        path = connection_path(name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        info = ConnectionInfo.read(path)
        assert info.key == key and info.host == address
        assert info.dispatcher.startswith(f"tcp://{address}:")
        sockets = listening_sockets(pids)
        for endpoint in (info.dispatcher, info.resourcemanager, info.events):
            assert (address, int(endpoint.rsplit(":", 1)[1])) in sockets, (endpoint, sockets)
        # beyond the ZeroMQ sockets, only loopback (py4j, Spark's block manager): no wildcard
        assert {a for a, _ in sockets} <= {address, *LOOPBACK}, sockets
        env = session.get_execution_environment()
        assert sorted(env.from_collection([1, 2, 3]).map(lambda x: -x).execute_and_collect()) == [-3, -2, -1]
        status = repr(session.status())
        assert key not in status
        assert key not in (sc_home / "sessions" / name / "jobmanager.log").read_text()
    finally:
        session.stop()
    assert wait_gone(sorted(pids)) == []
