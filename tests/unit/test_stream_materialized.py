"""An updating query's result materialised on the JobManager, bounded in rows
(``jobmanager/streamresults.py``'s :class:`MaterializedResult`): insert, update, delete and
eviction as Flink's SQL client's ``MaterializedCollectStreamResult`` does them."""

from __future__ import annotations

import pickle
import random
from typing import Any

import pytest

from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.jobmanager.streamresults import MaterializedResult
from sessioncluster.spark.flinksql.updating import changelog


def blobs(*changes: tuple[str, tuple[Any, ...]]) -> list[bytes]:
    return [pickle.dumps(c) for c in changes]


def rows(table: MaterializedResult) -> list[tuple[Any, ...]]:
    values, _, _ = table.snapshot()
    return [tuple(pickle.loads(v)[1]) for v in values]


class FlinkTable:
    """Flink's MaterializedCollectStreamResult (its list, row position cache and valid row
    position), transcribed, as the reference."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows, self.table, self.cache, self.valid = max_rows, [], {}, 0
        self.dropped = 0

    def apply(self, kind: str, row: tuple[Any, ...]) -> None:
        if kind in ("+I", "+U"):
            if len(self.table) - self.valid >= self.max_rows:
                self.clean_up()
            self.table.append(row)
            self.cache[row] = len(self.table) - 1
            return
        cached = self.cache.get(row)
        start = min(cached, len(self.table) - 1) if cached is not None else len(self.table) - 1
        for i in range(start, self.valid - 1, -1):
            if self.table[i] == row:
                del self.table[i]
                self.cache.pop(row, None)
                break

    def clean_up(self) -> None:
        row = self.table[self.valid]
        if self.cache.get(row) == self.valid:
            del self.cache[row]
        self.table[self.valid] = None
        self.valid += 1
        self.dropped += 1

    def rows(self) -> list[tuple[Any, ...]]:
        return list(self.table[self.valid:])


def test_an_update_moves_its_row_last_and_a_delete_removes_it() -> None:
    table = MaterializedResult(10)
    table.add(("q", 0), blobs(("+I", ("a", 1)), ("+I", ("b", 1))))
    table.add(("q", 1), blobs(("-U", ("a", 1)), ("+U", ("a", 2))))
    assert rows(table) == [("b", 1), ("a", 2)]
    table.add(("q", 2), blobs(("-D", ("b", 1))))
    assert rows(table) == [("a", 2)]
    assert table.snapshot()[1:] == (5, 0)  # its version (changes applied), none evicted


def test_the_oldest_row_is_evicted_and_counted() -> None:
    table = MaterializedResult(3)
    table.add(("q", 0), blobs(*[("+I", (w, 1)) for w in "abcde"]))
    assert rows(table) == [("c", 1), ("d", 1), ("e", 1)]
    assert table.dropped == 2 and len(table) == 3
    table.add(("q", 1), blobs(("-U", ("a", 1)), ("+U", ("a", 2))))  # a was evicted: no -U
    assert rows(table) == [("d", 1), ("e", 1), ("a", 2)]
    assert table.dropped == 3


def test_a_delete_removes_the_newest_equal_row_and_eviction_the_oldest() -> None:
    table = MaterializedResult(3)
    table.add(("q", 0), blobs(("+I", ("x",)), ("+I", ("y",)), ("+I", ("x",))))
    table.add(("q", 1), blobs(("-D", ("x",))))
    assert rows(table) == [("x",), ("y",)]
    table.add(("q", 2), blobs(("+I", ("x",)), ("+I", ("z",))))  # evicts the first x
    assert rows(table) == [("y",), ("x",), ("z",)]
    table.add(("q", 3), blobs(("-D", ("x",))))
    assert rows(table) == [("y",), ("z",)]


def test_a_batch_delivered_again_is_applied_once() -> None:
    table = MaterializedResult(5)
    assert table.add(("q", 0), blobs(("+I", ("a", 1))))
    assert not table.add(("q", 0), blobs(("+I", ("a", 1))))
    assert rows(table) == [("a", 1)]


def test_rows_with_lists_and_maps_are_matched_by_value() -> None:
    table = MaterializedResult(5)
    table.add(("q", 0), blobs(("+I", ("k", [1, 2], {"m": 1}))))
    table.add(("q", 1), blobs(("-U", ("k", [1, 2], {"m": 1})), ("+U", ("k", [3], {"m": 2}))))
    assert rows(table) == [("k", [3], {"m": 2})]


@pytest.mark.parametrize("max_rows", [1, 7, 40])
def test_a_random_group_by_changelog_as_flinks_table_within_max_rows(max_rows: int) -> None:
    rng = random.Random(max_rows)
    table, flink = MaterializedResult(max_rows), FlinkTable(max_rows)
    previous: dict[Any, Any] = {}
    counts: dict[str, int] = {}
    for batch_id in range(300):  # an updating GROUP BY over 60 keys, as the JobManager emits it
        words = [f"w{rng.randrange(60)}" for _ in range(rng.randint(1, 8))]
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        changes = changelog(previous, [(w, counts[w]) for w in sorted(set(words))], [0])
        if rng.random() < 0.1 and previous:  # now and then a key's row retracted
            key = rng.choice(sorted(previous))
            changes.append(("-D", previous.pop(key)))
            counts.pop(key[0] if isinstance(key, tuple) else key, None)
        table.add(("q", batch_id), blobs(*changes))
        for kind, row in changes:
            flink.apply(kind, tuple(row))
        assert len(table) <= max_rows
        assert rows(table) == flink.rows()
    assert table.dropped == flink.dropped > 0


def test_max_rows_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MaterializedResult(0)


def test_a_fetch_gives_the_table_when_it_changed_and_its_newest_rows_to_a_peek() -> None:
    table = MaterializedResult(3)
    table.add(("q", 0), blobs(*[("+I", (w, 1)) for w in "abcd"]))
    reply = table.fetch("job", 0, 100_000, JobStatus.RUNNING, None)
    assert [pickle.loads(v)[1] for v in reply.values] == [("b", 1), ("c", 1), ("d", 1)]
    assert (reply.next_seq, reply.dropped, reply.done) == (4, 1, False)
    assert table.fetch("job", 4, 100_000, JobStatus.RUNNING, None).values == []  # unchanged
    widget = table.fetch("job", 0, 2, JobStatus.RUNNING, None)  # the job widget's peek
    assert [pickle.loads(v)[1] for v in widget.values] == [("c", 1), ("d", 1)]
    assert table.fetch("job", 4, 100_000, JobStatus.FINISHED, None).done
