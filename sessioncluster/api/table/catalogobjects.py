"""Small value types of PyFlink's TableEnvironment: a catalog object's full name
(``pyflink.table.catalog.ObjectIdentifier``), a module's entry (``pyflink.table.module.ModuleEntry``)
and the SQL dialects (``pyflink.table.SqlDialect``)."""

from __future__ import annotations

from dataclasses import dataclass

from .sqltext import quote_identifier

#: the built-in catalog and database, Flink's names
DEFAULT_CATALOG = "default_catalog"
DEFAULT_DATABASE = "default_database"

#: the gateway's error codes a TableEnvironment tells a drop's outcomes by (a failed statement's
#: ``code``): the object named does not exist (``drop_table`` and the like answer False)...
NOT_FOUND = "not-found"
#: ...or a temporary function of that name stands in the way of ``drop_function``
TEMPORARY_FUNCTION_EXISTS = "temporary-function-exists"


class SqlDialect:
    """The SQL dialect a TableEnvironment parses (``TableConfig.set_sql_dialect``): Flink's
    own (``DEFAULT``) only; ``HIVE`` is refused when a statement is parsed, as by Flink without
    the Hive parser's jar."""

    DEFAULT = 0
    HIVE = 1

    #: ``table.sql-dialect``'s value of each
    NAMES = {DEFAULT: "default", HIVE: "hive"}


@dataclass(frozen=True)
class ObjectIdentifier:
    """A catalog object's full name: catalog, database, object."""

    catalog_name: str
    database_name: str
    object_name: str

    @staticmethod
    def of(catalog_name: str, database_name: str, object_name: str) -> "ObjectIdentifier":
        return ObjectIdentifier(catalog_name, database_name, object_name)

    def get_catalog_name(self) -> str:
        return self.catalog_name

    def get_database_name(self) -> str:
        return self.database_name

    def get_object_name(self) -> str:
        return self.object_name

    def as_serializable_string(self) -> str:
        """```catalog`.`database`.`object``` (Flink's ``toString`` too)."""
        return ".".join(quote_identifier(n) for n in
                        (self.catalog_name, self.database_name, self.object_name))

    def as_summary_string(self) -> str:
        return f"{self.catalog_name}.{self.database_name}.{self.object_name}"

    def __str__(self) -> str:
        return self.as_serializable_string()


@dataclass(frozen=True)
class ModuleEntry:
    """A module of the TableEnvironment and whether it is used (``list_full_modules``)."""

    _name: str
    _used: bool

    def name(self) -> str:
        return self._name

    def used(self) -> bool:
        return self._used

    def __repr__(self) -> str:
        return f"ModuleEntry{{name='{self._name}', used={str(self._used).lower()}}}"
