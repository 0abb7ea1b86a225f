"""The HA log of the session's Flink SQL catalog, compacted so that its replay stays bounded.

Each statement that changed the catalog (CREATE, DROP, SET, RESET) is an entry of the HA catalog
store (its signed ``ExecuteSql`` message, see :mod:`.ha`); a new leader plans them again in order.
Without compaction the log grows with every CREATE/DROP pair. :meth:`CatalogLog.compact` writes a
snapshot of the current catalog -- the entries whose objects still exist, in order: the last
CREATE of each table, view and function not dropped since, the last SET of each key not reset --
as one store entry ``<last entry>.snapshot`` (the store writes it atomically: a temporary file
and a rename), then removes the entries it covers and the older snapshots. A replay reads the
newest readable snapshot and the entries after the one it covers, so a crash between the
snapshot and the truncation replays to the same catalog (the covered entries are skipped). The
log is compacted once it holds more than ``max_records`` entries, and on a clean shutdown.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..api.table.environment import CATALOG_SCOPE
from ..protocol.messages import ExecuteSql
from ..spark.flinksql.statements import (
    AlterFunction,
    AlterTable,
    AlterView,
    CreateFunction,
    CreateTable,
    CreateTableAs,
    CreateView,
    Drop,
    Reset,
    Set,
    parse_statements,
)
from .ha import JobGraphStore, catalog_entry_id, pack_submission, unpack_submission

log = logging.getLogger("sessioncluster.ha")

#: the name suffix of a snapshot entry
SNAPSHOT = ".snapshot"
#: entries (a snapshot counts as one) after which the log is compacted
DEFAULT_MAX_RECORDS = 256

#: an entry of the log: its stored (signed) bytes and its message
Entry = tuple[bytes, ExecuteSql]
#: the live objects of a log: key -> its entries (a CREATE, the ALTERs since) and their places
Live = dict[tuple[Any, ...], list[tuple[int, Entry]]]


def _pack_entries(entries: Iterable[bytes]) -> bytes:
    return b"".join(struct.pack(">I", len(e)) + e for e in entries)


def _unpack_entries(data: bytes) -> list[bytes]:
    entries, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from(">I", data, i)
        if i + 4 + n > len(data):
            raise ValueError("a truncated catalog snapshot")
        entries.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return entries


def live_entries(entries: list[Entry]) -> list[Entry]:
    """The entries that still make the catalog, in their order: each replaced or dropped
    object's CREATE (and the ALTERs of it since) left out (the executor's rules: a temporary
    object shadows a permanent one; a DROP without TEMPORARY drops the temporary one first),
    each reset key's SET too. An ALTER stays with the CREATE it changes; a RENAME TO moves
    them to the new name."""
    live: Live = {}
    for at, entry in enumerate(entries):
        msg = entry[1]
        try:
            statement = parse_statements(msg.query)[0]
        except Exception:  # noqa: BLE001 - a statement the planner took: kept as it is
            live[("unparsed", at, msg.query)] = [(at, entry)]
            continue
        scope = (msg.configuration or {}).get(CATALOG_SCOPE, "")
        if isinstance(statement, (CreateTable, CreateTableAs, CreateView, CreateFunction)):
            key = _object_key(statement, scope)
            if key in live and statement.if_not_exists:
                continue
            live[key] = [(at, entry)]  # a replaced one is made again where it is now
        elif isinstance(statement, (AlterTable, AlterView, AlterFunction)):
            _alter(live, statement, scope, (at, entry))
        elif isinstance(statement, Drop):
            _drop(live, statement, scope)
        elif isinstance(statement, Set) and statement.key is not None:
            live[("set", statement.key)] = [(at, entry)]
        elif isinstance(statement, Reset):
            for key in [k for k in live if k[0] == "set" and statement.key in (None, k[1])]:
                del live[key]
    return [entry for _, entry in sorted(e for made in live.values() for e in made)]


def _alter(live: Live, statement: AlterTable | AlterView | AlterFunction, scope: str,
           entry: tuple[int, Entry]) -> None:
    """An ALTER joins the entries of the (permanent) object it changes; one of an object the
    log does not make (``IF EXISTS``) is left out."""
    kind = ("TABLE" if isinstance(statement, AlterTable) else
            "VIEW" if isinstance(statement, AlterView) else "FUNCTION")
    key = (kind, scope, kind == "FUNCTION", statement.name.lower())
    if key not in live:
        return
    made = live[key] + [entry]
    renamed = statement.new_name if isinstance(statement, AlterView) or (
        isinstance(statement, AlterTable) and statement.action == "RENAME") else None
    if renamed is not None:
        del live[key]
        key = (kind, scope, False, renamed.lower())
    live[key] = made


def _object_key(statement: CreateTable | CreateTableAs | CreateView | CreateFunction,
                scope: str) -> tuple[Any, ...]:
    if isinstance(statement, (CreateTable, CreateTableAs)):
        return ("TABLE", scope, statement.table.temporary, statement.table.name.lower())
    if isinstance(statement, CreateView):
        return ("VIEW", scope, statement.temporary, statement.name.lower())
    return ("FUNCTION", scope, True, statement.name.lower())


def _drop(live: Live, statement: Drop, scope: str) -> None:
    name = statement.name.lower()
    if statement.kind == "FUNCTION":
        live.pop(("FUNCTION", scope, True, name), None)
        return
    # a DROP that succeeded: DROP TEMPORARY drops the temporary object, DROP the permanent one
    # (refused while a temporary one exists)
    live.pop((statement.kind, scope, statement.temporary, name), None)


def replay(messages: list[ExecuteSql], plan: Callable[[ExecuteSql], Any]) -> int:
    """Plan ``messages`` again in order; one that fails (a view over a table a compacted log
    makes after it) is tried again after the others, as long as that plans more of them.
    Returns how many could not be planned."""
    pending = list(messages)
    while pending:
        failed: list[tuple[ExecuteSql, Exception]] = []
        for msg in pending:
            try:
                plan(msg)
            except Exception as exc:  # noqa: BLE001 - one statement lost, not the catalog
                failed.append((msg, exc))
        if len(failed) == len(pending):
            for msg, error in failed:
                log.warning("catalog statement %r could not be planned again: %s",
                            msg.query[:200], error)
            return len(failed)
        pending = [msg for msg, _ in failed]
    return 0


class CatalogLog:
    """The catalog statements of an HA session in its catalog store, compacted past
    ``max_records`` entries."""

    def __init__(self, store: JobGraphStore, key: str,
                 max_records: int = DEFAULT_MAX_RECORDS) -> None:
        self.store, self.key, self.max_records = store, key, max_records
        self._lock = threading.Lock()
        self._records: int | None = None  # entries in the store, counted on first use

    def append(self, msg: ExecuteSql) -> None:
        """Log a statement that changed the catalog; compact when the log is too long."""
        with self._lock:
            self.store.put(catalog_entry_id(), pack_submission(self.key, msg))
            if self._records is None:
                self._records = len(self.store.job_ids())
            else:
                self._records += 1
            if self._records > self.max_records:
                self._compact()

    def messages(self) -> list[ExecuteSql]:
        """The statements to plan again, in order: the newest readable snapshot's, then the
        entries after the one it covers."""
        with self._lock:
            return [msg for _, msg in self._entries(sorted(self.store.job_ids()))[0]]

    def compact(self) -> None:
        """Write a snapshot of the catalog, then remove the entries it covers."""
        with self._lock:
            self._compact()

    def _compact(self) -> None:
        ids = sorted(self.store.job_ids())
        entries, covered = self._entries(ids)
        last = max((i for i in ids if not i.endswith(SNAPSHOT)), default=None)
        if last is not None and (covered is None or last > covered):
            live = live_entries(entries)
            self.store.put(last + SNAPSHOT, _pack_entries(data for data, _ in live))
            log.info("compacted the catalog log: %d entries into a snapshot of %d", len(ids),
                     len(live))
            covered = last
        if covered is None:
            return
        snapshot = covered + SNAPSHOT
        for entry in ids:  # only now: a crash before this replays the same catalog
            if entry < snapshot and (entry.endswith(SNAPSHOT) or entry <= covered):
                self.store.remove(entry)
        self._records = len(self.store.job_ids())

    def _entries(self, ids: list[str]) -> tuple[list[Entry], str | None]:
        """The entries to replay and the last entry id the snapshot used covers (None)."""
        snapshots = [i for i in ids if i.endswith(SNAPSHOT)]
        base: list[Entry] = []
        covered: str | None = None
        for snapshot in reversed(snapshots):
            try:
                base = [self._unpack(data) for data in
                        _unpack_entries(self.store.get(snapshot) or b"")]
            except Exception as exc:  # noqa: BLE001 - a torn or forged one: the one before
                log.error("catalog snapshot %s is unreadable (%s); using an older one",
                          snapshot, exc)
                continue
            covered = snapshot[: -len(SNAPSHOT)]
            break
        entries = list(base)
        for entry in ids:
            if entry.endswith(SNAPSHOT) or (covered is not None and entry <= covered):
                continue
            try:
                entries.append(self._unpack(self.store.get(entry) or b""))
            except Exception as exc:  # noqa: BLE001 - never plan what does not pass the key
                log.error("catalog entry %s is unreadable or not signed with the session "
                          "key (%s); left out", entry, exc)
        return entries, covered

    def _unpack(self, data: bytes) -> Entry:
        msg = unpack_submission(self.key, data)
        if not isinstance(msg, ExecuteSql):
            raise ValueError(f"a {msg.type} message in the catalog store")
        return data, msg
