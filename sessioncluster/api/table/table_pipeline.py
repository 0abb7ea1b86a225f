"""PyFlink's ``TablePipeline``: a Table's INSERT into a sink, made by ``Table.insert_into`` and
run by ``execute()`` or added to a ``StatementSet``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .catalogobjects import DEFAULT_CATALOG, DEFAULT_DATABASE, ObjectIdentifier

if TYPE_CHECKING:
    from .result import StatementRunner, TableResult


class TablePipeline:
    """An ``INSERT INTO`` of a Table, not run yet."""

    def __init__(self, t_env: "StatementRunner", insert_sql: str, sink_path: str | None) -> None:
        self._t_env = t_env
        self.insert_sql = insert_sql
        self._sink_path = sink_path

    def execute(self) -> "TableResult":
        """Run the INSERT as a job."""
        return self._t_env.execute_sql(self.insert_sql)

    def explain(self, *extra_details: Any) -> str:
        """Flink's plan of the INSERT (``EXPLAIN``), as text."""
        return self._t_env.explain_sql(self.insert_sql, *extra_details)

    def print_explain(self, *extra_details: Any) -> None:
        print(self.explain(*extra_details))

    def get_sink_identifier(self) -> ObjectIdentifier | None:
        """The sink table's full name; None for a TableDescriptor's anonymous table."""
        if self._sink_path is None:
            return None
        parts = self._sink_path.split(".")
        return ObjectIdentifier(*([DEFAULT_CATALOG, DEFAULT_DATABASE][:3 - len(parts)] + parts))
