"""One catalog scope of the session: its permanent and temporary tables and views, and the
Spark names a query reads them by.

Flink resolves a name to a temporary object before a permanent one of the same name ("temporary
objects shadow permanent ones"); dropping the temporary one makes the permanent one visible
again. Here the session's Spark temporary views (a view made with ``create_temporary_view`` by a
client, a ``CREATE TEMPORARY VIEW``) keep their own names, and every other object of the catalog
is a Spark view of a hidden name of its scope (``__flink_table_<scope>_<name>``), so that a
permanent table never replaces a temporary view of the same name in Spark, whichever was made
last.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ...api.table.catalogobjects import DEFAULT_CATALOG, DEFAULT_DATABASE, NOT_FOUND
from .model import DEFAULT_PATH, CatalogTable, FlinkSqlError
from .statements import Drop

#: the prefix of every hidden Spark view of a catalog
HIDDEN_PREFIX = "__flink_"


@dataclass(slots=True)
class Catalog:
    """The tables and views of one catalog scope ("" is the session's shared catalog); keys are
    lower-case names."""

    scope: str = ""
    tables: dict[str, CatalogTable] = field(default_factory=dict)
    #: permanent view name -> (its name as written, its CREATE VIEW statement's text)
    views: dict[str, tuple[str, str]] = field(default_factory=dict)
    temporary_tables: dict[str, CatalogTable] = field(default_factory=dict)
    #: temporary view name -> its name as written (its Spark view has that name)
    temporary_views: dict[str, str] = field(default_factory=dict)
    #: temporary view name -> its CREATE VIEW statement's text (a view made by SQL; a client's
    #: DataFrame view has none): a streaming query reads the view's query in its place
    temporary_view_texts: dict[str, str] = field(default_factory=dict)

    def hidden_name(self, kind: str, name: str) -> str:
        """The Spark view name of a permanent table or view, or of a temporary table."""
        scope = hashlib.sha1(self.scope.encode()).hexdigest()[:8] if self.scope else "session"
        return f"{HIDDEN_PREFIX}{kind}_{scope}_{name.lower()}"

    def table(self, name: str) -> CatalogTable | None:
        """The table ``name`` resolves to (a temporary one first); None if it is none."""
        key = name.lower()
        if key in self.temporary_tables:
            return self.temporary_tables[key]
        if key in self.temporary_views:
            return None
        return self.tables.get(key)

    def all_tables(self) -> dict[str, CatalogTable]:
        """Every table a query can read by name: temporary ones shadow permanent ones."""
        shadowed = set(self.temporary_views)
        return {**{k: t for k, t in self.tables.items() if k not in shadowed},
                **self.temporary_tables}

    def view_text(self, name: str) -> str | None:
        """The CREATE VIEW text of the view ``name`` resolves to (a temporary one first); None
        if it is a table, a client's DataFrame view, or nothing."""
        key = name.lower()
        if key in self.temporary_tables:
            return None
        if key in self.temporary_views:
            return self.temporary_view_texts.get(key)
        view = self.views.get(key)
        return view[1] if view is not None else None

    def names(self) -> set[str]:
        """The names (as written) of every table and view of the catalog."""
        return ({t.name for t in self.tables.values()}
                | {t.name for t in self.temporary_tables.values()}
                | {name for name, _ in self.views.values()} | set(self.temporary_views.values()))

    def holds(self, name: str) -> bool:
        """Whether any object of the catalog has the name ``name``."""
        key = name.lower()
        return any(key in d for d in (self.tables, self.views, self.temporary_tables,
                                      self.temporary_views))

    def drop(self, statement: Drop, spark_view: bool) -> str | None:
        """``DROP [TEMPORARY] TABLE|VIEW`` (``spark_view``: the name is a client's temporary
        view, a Spark one): the Spark view of the object dropped to drop too (None: none was),
        or Flink 2.3's refusal: a permanent object's DROP while a temporary one of the name
        exists, even IF EXISTS (/work/briefs/data/tabledeps/probe.out)."""
        key, view = statement.name.lower(), statement.kind == "VIEW"
        what = "view" if view else "table"
        temporary = self.temporary_views if view else self.temporary_tables
        permanent: dict[str, Any] = self.views if view else self.tables
        if key in temporary or spark_view:
            if not statement.temporary:
                raise FlinkSqlError(
                    f"Temporary {what} with identifier '`{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`."
                    f"`{statement.name}`' exists. Drop it first before removing the permanent "
                    f"{what}.")
            temporary.pop(key, None)
            if view:
                self.temporary_view_texts.pop(key, None)
            return statement.name if view else self.hidden_name("temporary", key)
        if key not in permanent or statement.temporary:
            if statement.if_exists:
                return None
            prefix = "Temporary table or view" if statement.temporary else what.capitalize()
            raise FlinkSqlError(f"{prefix} with identifier '{DEFAULT_PATH}.{statement.name}' "
                                "does not exist.", NOT_FOUND)
        del permanent[key]
        return self.hidden_name("view" if view else "table", key)
