"""The TaskManager's library cache and the BlobServer's memory: bounded by size, least recently
used blob evicted first."""

from __future__ import annotations

import cloudpickle

from sessioncluster.taskmanager.agent import LibraryCache


def test_bounded_by_size_least_recently_used_first() -> None:
    cache = LibraryCache(capacity=100)
    for key in "abc":
        cache.put(key, bytes(30))
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("d", bytes(30))  # 120 > 100: b, the least recently used, goes
    assert cache.get("b") is None
    assert [k for k in "acd" if cache.get(k) is not None] == ["a", "c", "d"]
    assert (cache.stats.entries, cache.stats.bytes) == (3, 90)


def test_a_blob_larger_than_the_capacity_is_kept_alone() -> None:
    cache = LibraryCache(capacity=50)
    cache.put("small", bytes(10))
    cache.put("big", bytes(80))
    assert cache.get("small") is None and cache.get("big") is not None
    assert (cache.stats.entries, cache.stats.bytes) == (1, 80)


def test_putting_a_key_twice_counts_it_once() -> None:
    cache = LibraryCache(capacity=100)
    cache.put("a", bytes(40))
    cache.put("a", bytes(40))
    assert (cache.stats.entries, cache.stats.bytes) == (1, 40)


def test_the_blobserver_keeps_every_blob_on_disk_and_a_bounded_few_in_memory(tmp_path) -> None:
    from sessioncluster.jobmanager.blobserver import BlobServer

    blobs = BlobServer(tmp_path / "blobs", memory_bytes=100)
    data = {i: bytes([i]) * 40 for i in range(5)}
    keys = {i: BlobServer.key_of(d) for i, d in data.items()}
    for i, d in data.items():
        blobs.put(keys[i], d)
    assert blobs._memory.nbytes <= 100 and len(blobs._memory) == 2
    for i, d in data.items():  # the evicted ones are read back from disk
        assert blobs.get(keys[i]) == d
    assert BlobServer(tmp_path / "blobs").get(keys[0]) == data[0]  # a restarted JobManager
    assert blobs.missing({keys[1], "0" * 64}) == ["0" * 64]


def _user_function(x: int) -> float:
    return 1 / (x - 7)


def test_user_code_keeps_its_file_name_for_tracebacks() -> None:
    # cloudpickle >= 3.1.2 names every pickled function's file "<dynamic-code>"
    from sessioncluster.client.shipping import dumps_user_code as _dumps_user_code

    loaded = cloudpickle.loads(_dumps_user_code(lambda x: _user_function(x) + 1))
    assert loaded.__code__.co_filename == __file__
    assert loaded(8) == 2.0
    # the same code pickles to the same bytes: the BlobServer's key stays a cache key
    assert _dumps_user_code(_user_function) == _dumps_user_code(_user_function)


def test_user_classes_deep_inside_a_shipped_object_travel_by_value(tmp_path, monkeypatch) -> None:
    """A class from the user's own (not installed) package, held inside one of ours (a FileSink
    holding the user's BulkWriterFactory), must load where that package cannot be imported."""
    import subprocess
    import sys

    from sessioncluster.client.shipping import dumps_user_code

    package = tmp_path / "mywriters"
    package.mkdir()
    (package / "__init__.py").write_text(
        "class Factory:\n    def create(self, stream):\n        return 'made by ' + type(self).__name__\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import mywriters  # type: ignore[import-not-found]

    holder = {"sink": [mywriters.Factory()]}
    data = dumps_user_code(holder)
    assert "mywriters" not in cloudpickle.list_registry_pickle_by_value()
    code = ("import sys, cloudpickle; h = cloudpickle.loads(sys.stdin.buffer.read()); "
            "print(h['sink'][0].create(None))")
    out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                         cwd="/", check=True)
    assert out.stdout.decode().strip() == "made by Factory"


def test_a_slot_worker_with_the_code_loaded_registers_its_use_without_waiting(
        tmp_path, monkeypatch) -> None:
    """A warm task's blobs cost it no round trip to its TaskManager: the use is counted as a
    cache hit, and nothing is sent back; a worker without the code still waits for the bytes."""
    import os
    import threading

    import zmq

    from sessioncluster.cluster.connection import ConnectionInfo
    from sessioncluster.protocol.messages import FetchBlob
    from sessioncluster.taskmanager.agent import TaskManagerAgent
    from sessioncluster.taskmanager.daemon import CONNECTION_ENV, IPC_ENV
    from sessioncluster.taskmanager.slotworker import SlotWorker

    ctx = zmq.Context.instance()
    rm = ctx.socket(zmq.ROUTER)  # the ResourceManager's socket, which nothing here answers on
    rm.setsockopt(zmq.LINGER, 0)
    port = rm.bind_to_random_port("tcp://127.0.0.1")
    info = ConnectionInfo("cache", "k" * 64, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2",
                          f"tcp://127.0.0.1:{port}", os.getpid())
    info.write(tmp_path / "connection.json")
    ipc = f"ipc://{tmp_path}/tm.ipc"
    agent = TaskManagerAgent(info, ipc, os.getppid(), os.getpid(), "0", 1)
    monkeypatch.setenv(IPC_ENV, ipc)
    monkeypatch.setenv(CONNECTION_ENV, str(tmp_path / "connection.json"))
    worker = SlotWorker()
    data = cloudpickle.dumps(_user_function)
    agent.cache.put("code", data)
    received: list[FetchBlob] = []

    def serve_one() -> None:  # the agent's loop, for one message from the worker
        assert agent.workers.poll(5000)
        got = agent.signer.recv(agent.workers)
        assert got is not None and isinstance(got[1], FetchBlob)
        received.append(got[1])
        agent.on_fetch_blob(*got)

    try:
        serving = threading.Thread(target=serve_one)
        serving.start()
        assert worker.fetch("code", timeout=5.0) == data  # cold: the bytes, after a round trip
        serving.join()
        assert worker.load("code", data)(8) == 1.0
        assert worker.fetch("code", timeout=0.01) is None  # warm: nothing to wait for
        serve_one()
        assert received[-1].reply is False and received[-1].need_data is False
        assert (agent.cache.stats.hits, agent.cache.stats.misses) == (2, 0)
        assert not worker.sock.poll(200), "the agent answered a use that asked for no reply"
    finally:
        worker.sock.close(0)
        worker.ctx.term()
        agent.workers.close(0)
        agent.rm.close(0)
        agent.ctx.term()
        rm.close(0)
