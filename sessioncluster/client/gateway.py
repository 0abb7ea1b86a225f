"""The client's connection to a Dispatcher: signed request/reply, never a hang."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, TypeVar

import zmq

from ..cluster.connection import ConnectionInfo, pid_alive
from ..cluster.leader import NoLeaderError, retrieve_leader
from ..protocol.messages import ErrorReply, Message
from ..protocol.wire import MessageSigner

M = TypeVar("M", bound=Message)

log = logging.getLogger("sessioncluster.client")


class JobManagerGoneError(ConnectionError):
    """The session's JobManager died or stopped answering."""


class DispatcherError(RuntimeError):
    """The Dispatcher answered a request with an error."""

    def __init__(self, reply: ErrorReply) -> None:
        super().__init__(reply.error)
        self.kind = reply.kind
        self.reply = reply


class DispatcherGateway:
    """DEALER sockets to the Dispatcher, one per thread, so that threads sharing a Session
    (widgets, a thread pool of queries) wait for their replies at the same time.

    In an HA session, a request whose JobManager died or lost the leadership goes to the new
    leader once one is published (``on_leader_change`` callbacks hear of it)."""

    def __init__(self, info: ConnectionInfo, timeout: float = 30.0) -> None:
        self.info = info
        self.timeout = timeout
        self.signer = MessageSigner(info.key, sender=f"client-{os.getpid()}")
        self._ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self._local = threading.local()
        self._sockets: list[zmq.Socket] = []
        self._sockets_lock = threading.Lock()
        self._leader_lock = threading.Lock()
        #: called with the new leader's ConnectionInfo when requests follow one
        self.on_leader_change: list[Callable[[ConnectionInfo], None]] = []

    def _socket(self) -> zmq.Socket:
        sock = getattr(self._local, "sock", None)
        if (sock is not None and self._local.pid == os.getpid()
                and self._local.endpoint != self.info.dispatcher):
            self._reset()  # the leader moved
            sock = None
        if sock is None or self._local.pid != os.getpid():
            sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(self.info.dispatcher)
            self._local.sock, self._local.pid = sock, os.getpid()
            self._local.endpoint = self.info.dispatcher
            with self._sockets_lock:
                self._sockets.append(sock)
        return sock

    def request(self, msg: Message, expect: type[M], timeout: float | None = None) -> M:
        """Send ``msg`` and return the reply of type ``expect``; raise on an error reply, on a
        dead JobManager (in an HA session: when no new leader comes), or after ``timeout``
        seconds without an answer."""
        while True:
            info = self.info
            try:
                return self._request_once(info, msg, expect, timeout)
            except DispatcherError as exc:
                if not (info.ha and exc.kind == "not_leader"):
                    raise
            except JobManagerGoneError:
                if not info.ha or (self.info is info and self.jobmanager_alive(info)):
                    raise
            self.follow_leader(info.epoch)

    def follow_leader(self, epoch: int) -> None:
        """Wait for a leader newer than ``epoch`` and send requests there from now on;
        :class:`JobManagerGoneError` saying why if none comes in time."""
        with self._leader_lock:
            if self.info.epoch > epoch:
                return  # another thread followed it already
            try:
                info = retrieve_leader(self.info)
            except NoLeaderError as exc:
                raise JobManagerGoneError(str(exc)) from None
            log.info("session '%s': following the new leader (JobManager pid %d, epoch %d)",
                     info.name, info.jobmanager_pid, info.epoch)
            self.info = info  # each thread's socket moves on its next request
        for callback in list(self.on_leader_change):
            callback(info)

    def _request_once(self, info: ConnectionInfo, msg: Message, expect: type[M],
                      timeout: float | None) -> M:
        timeout = self.timeout if timeout is None else timeout
        sock = self._socket()
        self.signer.send(sock, msg)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._reset()
                raise JobManagerGoneError(
                    f"the JobManager of session '{self.info.name}' did not answer "
                    f"{msg.type} within {timeout:.0f} s")
            if sock.poll(int(min(left, 0.5) * 1000) + 1):
                got = self.signer.recv(sock)
                if got is None:
                    continue
                reply = got[1]
                if isinstance(reply, ErrorReply):
                    raise DispatcherError(reply)
                if not isinstance(reply, expect):
                    continue  # a late reply to an earlier, abandoned request
                return reply
            if not self.jobmanager_alive(info):
                self._reset()
                raise JobManagerGoneError(
                    f"the JobManager of session '{info.name}' (pid "
                    f"{info.jobmanager_pid}) is gone")

    def jobmanager_alive(self, info: ConnectionInfo | None = None) -> bool:
        """False once the (given, else current) JobManager is known to be dead."""
        info = info or self.info
        # Only a local JobManager can be checked by pid; a remote one by its answers.
        if info.host in ("127.0.0.1", "localhost", "::1"):
            return pid_alive(info.jobmanager_pid)
        return True

    def _reset(self) -> None:
        """Drop this thread's socket (a later request opens a fresh one)."""
        sock = getattr(self._local, "sock", None)
        if sock is not None:
            with self._sockets_lock:
                if sock in self._sockets:
                    self._sockets.remove(sock)
            sock.close(0)
            self._local.sock = None

    def close(self) -> None:
        with self._sockets_lock:
            for sock in self._sockets:
                sock.close(0)
            self._sockets.clear()
        self._local = threading.local()
