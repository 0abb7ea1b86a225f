"""Signing, framing, replay protection and restricted unpickling of wire messages."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shlex
import time
import uuid

import pytest
import zmq

from sessioncluster.graph.jobgraph import build_job_graph
from sessioncluster.graph.lifecycle import ExecutionState
from sessioncluster.graph.streamgraph import ChainingStrategy, OperatorKind, Partitioning, StreamGraph
from sessioncluster.protocol.messages import (
    Ack,
    ErrorReply,
    SubmitJob,
    TaskError,
    TaskEvent,
)
from sessioncluster.protocol.wire import DELIM, MessageSigner, ProtocolError

KEY = "0123456789abcdef" * 4


def put_blob(obj, what):
    return hashlib.sha256(repr(obj).encode()).hexdigest()


def first(t):
    return t[0]


def small_job_graph():
    g = StreamGraph()
    src = g.add_node(OperatorKind.SOURCE_COLLECTION, [("a", 1)], chaining=ChainingStrategy.HEAD)
    r = g.add_node(OperatorKind.REDUCE, max)
    sink = g.add_node(OperatorKind.SINK_COLLECT)
    g.add_edge(src, r, Partitioning.HASH, key_selector=first)
    g.add_edge(r, sink)
    return build_job_graph(g, [sink], "small", put_blob)


def submit_job():
    jg = small_job_graph()
    return SubmitJob(jg, {k: k.encode()[:8] for k in jg.blob_keys})


def task_event():
    return TaskEvent("job1", "v" * 32, 1, 3, 42, 0, ExecutionState.FAILED, 1234.5,
                     accumulators={"lines": ("IntCounter", 7)},
                     error=TaskError("ValueError", "boom", [("f.py", 3, "fn", "x = 1")], "Map", "1/2"),
                     tm_id="tm-1")


MESSAGES = [submit_job, task_event, lambda: ErrorReply("no such job", "unknown_job", ["k1"]), Ack]


def pair():
    return MessageSigner(KEY, sender="a"), MessageSigner(KEY, sender="b")


def signed(session: MessageSigner, body: bytes, type_name: str = "ack", sent: float | None = None,
           header: dict | None = None) -> list[bytes]:
    """Validly signed frames around any body and header."""
    h = header or {"id": uuid.uuid4().hex, "type": type_name,
                   "time": time.time() if sent is None else sent, "from": "test"}
    header_bytes = json.dumps(h).encode()
    return [DELIM, session.sign(header_bytes, body), header_bytes, body]


@pytest.mark.parametrize("make", MESSAGES)
def test_round_trip(make):
    a, b = pair()
    msg = make()
    out = b.deserialize(a.serialize(msg))
    assert type(out) is type(msg)
    assert out == msg
    assert out is not msg


def test_round_trip_keeps_enum_identity_and_graph():
    a, b = pair()
    msg = submit_job()
    out = b.deserialize(a.serialize(msg))
    assert out.job_graph.vertices[1].inputs[0].ship_strategy is Partitioning.HASH
    assert out.job_graph.explain() == msg.job_graph.explain()
    ev = b.deserialize(a.serialize(task_event()))
    assert ev.state is ExecutionState.FAILED
    assert ev.error.format().endswith("ValueError: boom")


def test_header_names_type_and_sender():
    a, _ = pair()
    frames = a.serialize(Ack("hi"))
    assert frames[0] == DELIM and len(frames) == 4
    header = json.loads(frames[2])
    assert header["type"] == "ack" and header["from"] == "a"


def flip(data: bytes, i: int = -1) -> bytes:
    b = bytearray(data)
    b[i] ^= 0x01
    return bytes(b)


TAMPERINGS = {
    "body": lambda f: [f[0], f[1], f[2], flip(f[3], len(f[3]) // 2)],
    "header": lambda f: [f[0], f[1], f[2].replace(b'"from":"a"', b'"from":"x"'), f[3]],
    "signature": lambda f: [f[0], f[1][:-1] + (b"0" if f[1][-1:] != b"0" else b"1"), f[2], f[3]],
    "empty signature": lambda f: [f[0], b"", f[2], f[3]],
    "too few frames": lambda f: f[:3],
    "too many frames": lambda f: [*f, b"extra"],
    "wrong delimiter": lambda f: [b"<SC0>", *f[1:]],
}


@pytest.mark.parametrize("how", sorted(TAMPERINGS))
def test_tampered_frames_are_rejected(how):
    a, b = pair()
    frames = a.serialize(ErrorReply("x"))
    bad = TAMPERINGS[how](frames)
    assert bad != frames
    with pytest.raises(ProtocolError):
        b.deserialize(bad)
    # the genuine frames are still accepted: the rejection was about the tampering
    assert b.deserialize(frames) == ErrorReply("x")


def test_wrong_key_is_rejected():
    a = MessageSigner(KEY)
    with pytest.raises(ProtocolError, match="bad signature"):
        MessageSigner("another key").deserialize(a.serialize(Ack()))


def test_missing_delimiter_is_rejected():
    a, b = pair()
    frames = a.serialize(Ack())
    with pytest.raises(ProtocolError, match="delimiter"):
        b.split([b"ident", *frames[1:]])
    assert b.split([b"id1", b"id2", *frames]) == ([b"id1", b"id2"], frames)


def test_replay_is_rejected():
    a, b = pair()
    frames = a.serialize(Ack("once"))
    assert b.deserialize(list(frames)) == Ack("once")
    with pytest.raises(ProtocolError, match="replayed"):
        b.deserialize(list(frames))
    # a fresh message with the same content is not a replay
    assert b.deserialize(a.serialize(Ack("once"))) == Ack("once")


@pytest.mark.parametrize("offset", [-1000.0, +3600.0])
def test_validly_signed_message_outside_the_time_window_is_rejected(offset):
    a, b = MessageSigner(KEY, max_age=300.0), MessageSigner(KEY, max_age=300.0)
    body = pickle.dumps(Ack("old"), protocol=5)
    frames = signed(a, body, "ack", sent=time.time() + offset)
    with pytest.raises(ProtocolError, match="time window"):
        b.deserialize(frames)
    # the same body with a current time and a fresh signature is fine
    assert b.deserialize(signed(a, body, "ack")) == Ack("old")


def test_malformed_header_is_rejected():
    a, b = pair()
    body = pickle.dumps(Ack(), protocol=5)
    header = b"not json"
    with pytest.raises(ProtocolError, match="malformed header"):
        b.deserialize([DELIM, a.sign(header, body), header, body])
    with pytest.raises(ProtocolError, match="malformed header"):
        b.deserialize(signed(a, body, header={"type": "ack"}))


def test_body_of_another_type_than_the_header_is_rejected():
    a, b = pair()
    with pytest.raises(ProtocolError, match="'error'"):
        b.deserialize(signed(a, pickle.dumps(Ack()), "error"))
    with pytest.raises(ProtocolError, match="not a 'ack' message"):
        b.deserialize(signed(a, pickle.dumps({"type": "ack"}), "ack"))


class Touch:
    """Runs a shell command when unpickled."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.path))}",))


def test_signed_body_with_forbidden_global_is_refused_without_side_effect(tmp_path):
    target = tmp_path / "pwned"
    body = pickle.dumps(Touch(target))
    assert b"system" in body  # the payload really names os.system
    a, b = pair()
    with pytest.raises(ProtocolError, match="refusing to load"):
        b.deserialize(signed(a, body, "ack"))
    assert not target.exists()


@pytest.mark.parametrize("signature", [b"", b"0" * 64])
def test_unsigned_or_badly_signed_evil_body_is_never_unpickled(tmp_path, signature):
    target = tmp_path / "pwned"
    body = pickle.dumps(Touch(target))
    header = json.dumps({"id": "x", "type": "ack", "time": time.time(), "from": ""}).encode()
    _, b = pair()
    with pytest.raises(ProtocolError, match="unsigned|bad signature"):
        b.deserialize([DELIM, signature, header, body])
    assert b.unpack([b"ident", DELIM, signature, header, body]) is None
    assert not target.exists()


def _unicode(s: str) -> bytes:
    data = s.encode()
    return pickle.BINUNICODE + len(data).to_bytes(4, "little") + data


def test_dotted_name_in_allowed_module_cannot_reach_os(tmp_path):
    target = tmp_path / "pwned"
    body = (pickle.PROTO + bytes([4]) + _unicode("sessioncluster.graph.executiongraph")
            + _unicode("os.mkdir") + pickle.STACK_GLOBAL + _unicode(str(target))
            + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP)
    a, b = pair()
    with pytest.raises(ProtocolError):
        b.deserialize(signed(a, body, "ack"))
    assert not target.exists()


def test_unpack_returns_none_and_counts_rejections():
    a, b = pair()
    frames = a.serialize(Ack("ok"))
    assert b.unpack([b"id", *frames]) == ([b"id"], Ack("ok"))
    assert b.rejected == 0
    assert b.unpack([b"id", *frames]) is None  # replay
    assert b.unpack(frames[1:]) is None  # no delimiter
    assert b.unpack([DELIM, b"", frames[2], frames[3]]) is None  # unsigned
    assert b.rejected == 3
    assert b.unpack(a.serialize(Ack("again"))) == ([], Ack("again"))
    assert b.rejected == 3


def test_repr_does_not_show_the_key():
    s = MessageSigner(KEY, sender="jobmanager")
    assert KEY not in repr(s) and KEY[:16] not in repr(s)
    assert "jobmanager" in repr(s)


def test_a_key_is_required():
    with pytest.raises(ValueError):
        MessageSigner("")


def test_zmq_dealer_router_round_trip():
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    dealer = ctx.socket(zmq.DEALER)
    try:
        for s in (router, dealer):
            s.linger = 0
        port = router.bind_to_random_port("tcp://127.0.0.1")
        dealer.setsockopt(zmq.IDENTITY, b"client-1")
        dealer.connect(f"tcp://127.0.0.1:{port}")
        client, server = MessageSigner(KEY, "client"), MessageSigner(KEY, "server")

        client.send(dealer, submit_job())
        assert router.poll(10_000), "no message reached the router"
        ident, msg = server.recv(router)
        assert ident == [b"client-1"]
        assert msg == submit_job()

        server.send(router, ErrorReply("missing", "missing_blob", ["k"]), ident=ident)
        assert dealer.poll(10_000), "no reply reached the dealer"
        assert client.recv(dealer) == ([], ErrorReply("missing", "missing_blob", ["k"]))
        assert client.rejected == server.rejected == 0
    finally:
        dealer.close()
        router.close()
        ctx.term()
