"""The client's connection to a Dispatcher: signed request/reply, never a hang."""

from __future__ import annotations

import os
import threading
import time
from typing import TypeVar

import zmq

from ..connection import ConnectionInfo, pid_alive
from ..protocol.messages import ErrorReply, Message
from ..protocol.wire import Session

M = TypeVar("M", bound=Message)


class JobManagerGoneError(ConnectionError):
    """The session's JobManager died or stopped answering."""


class DispatcherError(RuntimeError):
    """The Dispatcher answered a request with an error."""

    def __init__(self, reply: ErrorReply) -> None:
        super().__init__(reply.error)
        self.kind = reply.kind
        self.reply = reply


class DispatcherGateway:
    """One DEALER socket to the Dispatcher; thread-safe (one request at a time)."""

    def __init__(self, info: ConnectionInfo, timeout: float = 30.0) -> None:
        self.info = info
        self.timeout = timeout
        self.session = Session(info.key, sender=f"client-{os.getpid()}")
        self._lock = threading.Lock()
        self._ctx = zmq.Context.instance()
        self._sock: zmq.Socket | None = None
        self._pid = os.getpid()

    def _socket(self) -> zmq.Socket:
        if self._sock is None or self._pid != os.getpid():
            self._sock = self._ctx.socket(zmq.DEALER)
            self._sock.setsockopt(zmq.LINGER, 0)
            self._sock.connect(self.info.dispatcher)
            self._pid = os.getpid()
        return self._sock

    def request(self, msg: Message, expect: type[M], timeout: float | None = None) -> M:
        """Send ``msg`` and return the reply of type ``expect``; raise on an error reply, on a
        dead JobManager, or after ``timeout`` seconds without an answer."""
        timeout = self.timeout if timeout is None else timeout
        with self._lock:
            sock = self._socket()
            self.session.send(sock, msg)
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._reset()
                    raise JobManagerGoneError(
                        f"the JobManager of session '{self.info.name}' did not answer "
                        f"{msg.type} within {timeout:.0f} s")
                if sock.poll(int(min(left, 0.5) * 1000) + 1):
                    got = self.session.recv(sock)
                    if got is None:
                        continue
                    reply = got[1]
                    if isinstance(reply, ErrorReply):
                        raise DispatcherError(reply)
                    if not isinstance(reply, expect):
                        continue  # a late reply to an earlier, abandoned request
                    return reply
                if not self.jobmanager_alive():
                    self._reset()
                    raise JobManagerGoneError(
                        f"the JobManager of session '{self.info.name}' (pid "
                        f"{self.info.jobmanager_pid}) is gone")

    def jobmanager_alive(self) -> bool:
        # Only a local JobManager can be checked by pid; a remote one by its answers.
        if self.info.host in ("127.0.0.1", "localhost", "::1"):
            return pid_alive(self.info.jobmanager_pid)
        return True

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None

    def close(self) -> None:
        with self._lock:
            self._reset()
