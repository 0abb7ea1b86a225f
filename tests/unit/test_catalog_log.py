"""Compaction of the HA catalog log (no Spark): the log on disk stays bounded, and its replay
(a snapshot, then the entries after it) makes the same catalog as the whole log would, also
after a crash between the snapshot and the truncation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessioncluster.jobmanager.catalog_log import SNAPSHOT, CatalogLog, live_entries, replay
from sessioncluster.jobmanager.ha import FileJobGraphStore, pack_submission
from sessioncluster.protocol.messages import ExecuteSql
from sessioncluster.protocol.wire import new_key
from sessioncluster.spark.flinksql.statements import (
    CreateFunction,
    CreateTable,
    CreateView,
    Drop,
    Reset,
    Set,
    parse_statements,
)


def sql(query: str, scope: str = "") -> ExecuteSql:
    configuration = {"sessioncluster.catalog-scope": scope} if scope else {}
    return ExecuteSql(query, dialect="flink", configuration=configuration)


class CatalogModel:
    """What the session's catalog holds after statements, by the planner's rules: objects by
    (kind, scope, temporary, name) -> their statement, and the SET options."""

    def __init__(self) -> None:
        self.objects: dict[tuple[Any, ...], str] = {}
        self.options: dict[str, str] = {}

    def plan(self, msg: ExecuteSql) -> None:
        statement = parse_statements(msg.query)[0]
        scope = msg.configuration.get("sessioncluster.catalog-scope", "")
        if isinstance(statement, (CreateTable, CreateView, CreateFunction)):
            if isinstance(statement, CreateTable):
                key = ("TABLE", scope, statement.table.temporary, statement.table.name.lower())
            elif isinstance(statement, CreateView):
                key = ("VIEW", scope, statement.temporary, statement.name.lower())
            else:
                key = ("FUNCTION", scope, True, statement.name.lower())
            if key in self.objects and statement.if_not_exists:
                return
            self.objects[key] = msg.query
        elif isinstance(statement, Drop):
            kind, name = statement.kind, statement.name.lower()
            if kind == "FUNCTION" or (kind, scope, True, name) in self.objects:
                self.objects.pop((kind, scope, True, name), None)
            elif not statement.temporary:
                self.objects.pop((kind, scope, False, name), None)
        elif isinstance(statement, Set):
            self.options[statement.key or ""] = statement.value or ""
        elif isinstance(statement, Reset):
            self.options = {} if statement.key is None else {
                k: v for k, v in self.options.items() if k != statement.key}

    def state(self) -> tuple[dict[tuple[Any, ...], str], dict[str, str]]:
        return self.objects, self.options


def catalog_of(messages: list[ExecuteSql]) -> Any:
    model = CatalogModel()
    for msg in messages:
        model.plan(msg)
    return model.state()


def table(name: str, i: int, temporary: bool = False) -> ExecuteSql:
    return sql(f"CREATE {'TEMPORARY ' if temporary else ''}TABLE {name} (a INT, v{i} STRING) "
               "WITH ('connector' = 'blackhole')")


def workload() -> list[ExecuteSql]:
    """1,000 create/drop pairs over a few names, between statements that stay."""
    out = [table("kept", 0), sql("SET 'parallelism.default' = '2'")]
    for i in range(1000):
        name = f"t{i % 7}"
        out += [table(name, i), sql(f"DROP TABLE {name}")]
        if i % 250 == 0:
            out.append(sql(f"SET 'pipeline.name' = 'job {i}'"))
    out += [table("t3", 1001), sql("CREATE VIEW v AS SELECT a FROM kept"),
            table("kept", 5, temporary=True), sql("RESET 'parallelism.default'")]
    return out


@pytest.fixture
def key() -> str:
    return new_key()


def test_the_log_stays_bounded_and_replays_the_same_catalog(tmp_path: Path, key: str) -> None:
    store = FileJobGraphStore(tmp_path / "catalog")
    log = CatalogLog(store, key, max_records=50)
    statements = workload()
    most = 0
    for msg in statements:
        log.append(msg)
        most = max(most, len(list((tmp_path / "catalog").iterdir())))
    assert len(statements) > 2000 and most <= 51
    replayed = CatalogLog(FileJobGraphStore(tmp_path / "catalog"), key).messages()
    assert catalog_of(replayed) == catalog_of(statements)
    objects, options = catalog_of(replayed)
    assert set(objects) == {("TABLE", "", False, "kept"), ("TABLE", "", True, "kept"),
                            ("TABLE", "", False, "t3"), ("VIEW", "", False, "v")}
    assert options == {"pipeline.name": "job 750"}
    log.compact()  # a clean shutdown: one snapshot of what is left
    names = [p.name for p in (tmp_path / "catalog").iterdir()]
    assert len(names) == 1 and names[0].endswith(SNAPSHOT)
    assert catalog_of(log.messages()) == catalog_of(statements)
    assert len(log.messages()) == 5  # kept (twice), t3, v, the last SET


class CrashingStore(FileJobGraphStore):
    """A store whose process dies at the first removal: after the snapshot, before the
    truncation."""

    def remove(self, job_id: str) -> None:
        raise SystemExit("killed between the snapshot and the truncation")


def test_a_crash_between_snapshot_and_truncation_replays_the_same_catalog(
        tmp_path: Path, key: str) -> None:
    directory = tmp_path / "catalog"
    log = CatalogLog(FileJobGraphStore(directory), key, max_records=10_000)
    statements = workload()[:300]
    for msg in statements:
        log.append(msg)
    with pytest.raises(SystemExit):
        CatalogLog(CrashingStore(directory), key).compact()
    on_disk = [p.name for p in directory.iterdir()]
    assert sum(n.endswith(SNAPSHOT) for n in on_disk) == 1 and len(on_disk) == 301
    replayed = CatalogLog(FileJobGraphStore(directory), key).messages()
    assert catalog_of(replayed) == catalog_of(statements)
    assert len(replayed) < 20  # the snapshot, not the 300 entries it covers
    log.compact()  # the next compaction finishes the truncation
    assert len(list(directory.iterdir())) == 1


def test_a_torn_snapshot_is_left_for_the_log(tmp_path: Path, key: str) -> None:
    store = FileJobGraphStore(tmp_path / "catalog")
    log = CatalogLog(store, key, max_records=10_000)
    statements = workload()[:40]
    for msg in statements:
        log.append(msg)
    last = sorted(store.job_ids())[-1]
    store.put(last + SNAPSHOT, b"\x00\x00\x01\x00torn")
    assert catalog_of(log.messages()) == catalog_of(statements)
    forged = pack_submission(new_key(), table("forged", 0))  # not the session's key
    store.put("99999999999999999999-0-000000", forged)
    assert catalog_of(log.messages()) == catalog_of(statements)


def test_live_entries_follow_the_planner_rules() -> None:
    statements = [table("t", 1), table("t", 2, temporary=True), sql("DROP TEMPORARY TABLE t"),
                  sql("CREATE TEMPORARY VIEW w AS SELECT 1"),
                  sql("CREATE VIEW IF NOT EXISTS w2 AS SELECT 1"),
                  sql("CREATE VIEW IF NOT EXISTS w2 AS SELECT 2"),
                  table("s", 1, temporary=True), sql("DROP TEMPORARY TABLE s"),
                  table("x", 1), sql("DROP TEMPORARY TABLE x"),
                  table("o", 1), sql("DROP TABLE o"), table("o", 2)]
    statements.append(table("scoped", 1))
    statements[-1].configuration["sessioncluster.catalog-scope"] = "program-1"
    statements.append(sql("DROP TABLE scoped"))  # another scope: not that table
    statements += [sql("SET 'a' = '1'"), sql("SET 'b' = '2'"), sql("RESET")]
    live = [m.query for _, m in live_entries([(b"", m) for m in statements])]
    assert catalog_of([m for m in statements]) == catalog_of(
        [sql(q) if "scoped" not in q else statements[13] for q in live])
    assert "DROP" not in " ".join(live) and "SET" not in " ".join(live)
    assert sum("TABLE t " in q for q in live) == 1  # the permanent t, its temporary dropped
    assert "SELECT 2" not in " ".join(live)  # IF NOT EXISTS of an existing view: no-op


def test_replay_plans_a_view_after_the_table_it_reads() -> None:
    made: list[str] = []

    def plan(msg: ExecuteSql) -> None:
        if "VIEW" in msg.query and "t" not in made:
            raise ValueError("Object 't' not found")
        made.append("v" if "VIEW" in msg.query else "t")

    assert replay([sql("CREATE VIEW v AS SELECT * FROM t"), table("t", 1)], plan) == 0
    assert made == ["t", "v"]
    assert replay([sql("CREATE VIEW z AS SELECT * FROM nothing")],
                  lambda m: (_ for _ in ()).throw(ValueError("no"))) == 1


def test_an_alter_stays_with_the_create_it_changes() -> None:
    statements = [table("t", 1), sql("CREATE VIEW v AS SELECT a FROM t"),
                  sql("ALTER TABLE t ADD c INT"), sql("ALTER VIEW v AS SELECT c FROM t"),
                  table("x", 1), sql("ALTER TABLE x SET ('a' = 'b')"), sql("DROP TABLE x"),
                  sql("ALTER TABLE IF EXISTS nothing RENAME TO y"),
                  sql("ALTER TABLE t RENAME TO t2"), sql("ALTER TABLE t2 DROP c"),
                  table("t", 2), sql("ALTER VIEW v RENAME TO w"), sql("DROP VIEW w")]
    live = [m.query for _, m in live_entries([(b"", m) for m in statements])]
    assert live == [statements[i].query for i in (0, 2, 8, 9, 10)]
