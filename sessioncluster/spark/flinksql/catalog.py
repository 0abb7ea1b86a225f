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

from .model import CatalogTable

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
