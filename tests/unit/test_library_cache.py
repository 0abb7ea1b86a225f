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
