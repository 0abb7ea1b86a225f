"""Framing and signing of every ZeroMQ message: the one place that does it.

A message on the wire is a list of frames, after any ZeroMQ routing identities::

    [*routing_ids, b"<SC1>", signature, header, body]

``header`` is JSON (message id, type, time, sender); ``body`` is the pickled message dataclass.
``signature`` is the hex HMAC-SHA256 of header and body with the session key, as in
jupyter_client. A frame list is unpickled only after its signature checked out, and then only
with :class:`RestrictedUnpickler`, which loads nothing but this package's message and graph
types and plain builtins. A signature seen before, or a header older than ``max_age``, is a
replay and is rejected. User code and user data travel as opaque ``bytes`` fields and are never
unpickled by the JobManager.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import math
import os
import pickle
import time
import uuid
from typing import Any

from ..lru import Lru
from .messages import Message

log = logging.getLogger(__name__)

DELIM = b"<SC1>"
#: Upper bound for one message; ZeroMQ drops larger ones before they reach Python.
MAX_MESSAGE_BYTES = 512 * 1024 * 1024


class ProtocolError(ValueError):
    """A frame list that is malformed, unsigned, wrongly signed, replayed or of a bad type."""


_ALLOWED_BUILTINS = frozenset(
    {"set", "frozenset", "tuple", "list", "dict", "bytes", "bytearray", "complex", "slice", "range"}
)
_ALLOWED_MODULE_PREFIXES = (
    "sessioncluster.protocol.messages",
    "sessioncluster.graph.",
    "sessioncluster.api.accumulators",
    "sessioncluster.api.restart",  # a JobGraph's restart strategy: frozen data
    "sessioncluster.common.execution_mode",  # a JobGraph's RuntimeExecutionMode
)


class RestrictedUnpickler(pickle.Unpickler):
    """Loads only message/graph dataclasses of this package and plain builtins."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        if module == "copyreg" and name == "_reconstructor":
            return super().find_class(module, name)
        # no dotted names: protocol 4 resolves "os.system" through a module's own imports
        if module.startswith(_ALLOWED_MODULE_PREFIXES) and not name.startswith("_") and "." not in name:
            return super().find_class(module, name)
        raise ProtocolError(f"refusing to load {module}.{name} from a message")


#: signatures remembered for replay detection at most (a flood cannot exhaust memory)
MAX_REMEMBERED_SIGNATURES = 1_000_000

#: shortest key accepted from a user (``SESSIONCLUSTER_KEY``); ``new_key`` makes 64
MIN_KEY_CHARS = 32


def new_key() -> str:
    """A fresh session key (hex)."""
    return os.urandom(32).hex()


class MessageSigner:
    """Signs outgoing and checks incoming messages with one key.

    ``sender`` names this end in headers (for logs); ``max_age`` bounds how old a message
    may be and how long its signature is remembered for replay detection.
    """

    def __init__(self, key: str | bytes, sender: str = "", max_age: float = 300.0) -> None:
        if not key:
            raise ValueError("a session key is required to sign messages")
        self._key = key.encode() if isinstance(key, str) else key
        self.sender = sender
        self.max_age = max_age
        #: signatures seen within ``max_age`` (replays are refused), oldest first
        self._seen: Lru[bytes, float] = Lru(MAX_REMEMBERED_SIGNATURES)
        self.rejected = 0

    def __repr__(self) -> str:  # never show the key
        return f"MessageSigner(sender={self.sender!r})"

    def sign(self, *parts: bytes) -> bytes:
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part)
        return mac.hexdigest().encode()

    def serialize(self, msg: Message) -> list[bytes]:
        """The signed frames of ``msg`` (without routing identities)."""
        header = json.dumps(
            {"id": uuid.uuid4().hex, "type": msg.type, "time": time.time(), "from": self.sender},
            separators=(",", ":"),
        ).encode()
        body = pickle.dumps(msg, protocol=5)
        return [DELIM, self.sign(header, body), header, body]

    def split(self, frames: list[bytes]) -> tuple[list[bytes], list[bytes]]:
        """Split routing identities from the message frames."""
        try:
            i = frames.index(DELIM)
        except ValueError:
            raise ProtocolError("no message delimiter") from None
        return frames[:i], frames[i:]

    def deserialize(self, frames: list[bytes]) -> Message:
        """Check and decode message frames (starting at the delimiter)."""
        if len(frames) != 4 or frames[0] != DELIM:
            raise ProtocolError(f"expected 4 frames from the delimiter, got {len(frames)}")
        _, signature, header_bytes, body = frames
        if not signature:
            raise ProtocolError("unsigned message")
        if not hmac.compare_digest(signature, self.sign(header_bytes, body)):
            raise ProtocolError("bad signature")
        try:
            header = json.loads(header_bytes)
            sent = float(header["time"])
            type_name = str(header["type"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ProtocolError(f"malformed header: {exc}") from None
        now = time.time()
        if not math.isfinite(sent) or sent < now - self.max_age or sent > now + 60:
            raise ProtocolError("message outside the accepted time window")
        self._expire(now)
        if signature in self._seen:
            raise ProtocolError("replayed message")
        self._seen.put(signature, sent)
        try:
            msg = RestrictedUnpickler(io.BytesIO(body)).load()
        except ProtocolError:
            raise
        except Exception as exc:
            raise ProtocolError(f"undecodable body: {type(exc).__name__}: {exc}") from None
        if not isinstance(msg, Message) or msg.type != type_name:
            raise ProtocolError(f"body is not a {type_name!r} message")
        return msg

    def _expire(self, now: float) -> None:
        limit = now - self.max_age
        oldest = self._seen.oldest()
        while oldest is not None and oldest[1] < limit:
            self._seen.pop_oldest()
            oldest = self._seen.oldest()

    # -- socket helpers -------------------------------------------------------------------
    def send(self, socket: Any, msg: Message, ident: list[bytes] | None = None,
             topic: bytes | None = None) -> None:
        frames = self.serialize(msg)
        if ident:
            frames = [*ident, *frames]
        if topic is not None:
            frames = [topic, *frames]
        socket.send_multipart(frames, copy=False)

    def recv(self, socket: Any, flags: int = 0) -> tuple[list[bytes], Message] | None:
        """Receive one message: ``(routing ids, message)``, or ``None`` for a rejected one."""
        return self.unpack(socket.recv_multipart(flags))

    def unpack(self, frames: list[bytes]) -> tuple[list[bytes], Message] | None:
        """Routing ids and the checked message, or ``None`` (logged) for a rejected frame list."""
        try:
            ident, rest = self.split(frames)
            return ident, self.deserialize(rest)
        except ProtocolError as exc:
            self.rejected += 1
            log.warning("%s dropped a message: %s", self.sender or "endpoint", exc)
            return None
