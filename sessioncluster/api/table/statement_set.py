"""PyFlink's ``StatementSet``: several INSERTs run as one job (``EXECUTE STATEMENT SET``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .result import StatementRunner, TableResult


class StatementSet:
    """INSERT statements added one by one, then executed (or explained) together."""

    def __init__(self, t_env: "StatementRunner") -> None:
        self._t_env = t_env
        self._statements: list[str] = []

    def add_insert_sql(self, stmt: str) -> "StatementSet":
        """Add an ``INSERT INTO ...`` statement."""
        self._statements.append(stmt.strip().rstrip(";").strip())
        return self

    def add_insert(self, target_path_or_descriptor: Any, table: Any,
                   overwrite: bool = False) -> "StatementSet":
        """Add the insertion of ``table`` (a Table) into the table at a path (or of a
        TableDescriptor)."""
        return self.add_insert_sql(table.insert_sql(target_path_or_descriptor, overwrite))

    def statement_set_sql(self) -> str:
        """``EXECUTE STATEMENT SET BEGIN <insert>; ... END``."""
        if not self._statements:
            raise ValueError("the statement set is empty: add_insert_sql() or add_insert() first")
        body = "".join(f"{s};\n" for s in self._statements)
        return f"EXECUTE STATEMENT SET\nBEGIN\n{body}END"

    def execute(self) -> "TableResult":
        """Run the INSERTs as one job."""
        return self._t_env.execute_sql(self.statement_set_sql())

    def add(self, table_pipeline: Any) -> "StatementSet":
        """Add a ``TablePipeline`` (``Table.insert_into(...)``)."""
        return self.add_insert_sql(table_pipeline.insert_sql)

    def print_explain(self, *extra_details: Any) -> None:
        print(self.explain(*extra_details))

    def explain(self, *extra_details: Any) -> str:
        body = "".join(f"{s};\n" for s in self._statements)
        return self._t_env.explain_sql(f"STATEMENT SET\nBEGIN\n{body}END", *extra_details)
