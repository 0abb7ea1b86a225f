"""What the Flink SQL planner knows of a table: a catalog table as ``CREATE TABLE`` declares it.

Types and expressions are kept as Flink SQL text (``TIMESTAMP(3)``, ``ts - INTERVAL '5'
SECOND``); the parser produces them, the connectors and the planner read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...api.table.catalogobjects import DEFAULT_CATALOG, DEFAULT_DATABASE

#: the session's one catalog and database, Flink's default ones
DEFAULT_PATH = f"{DEFAULT_CATALOG}.{DEFAULT_DATABASE}"


class FlinkSqlError(ValueError):
    """A statement Flink rejects, or one this planner cannot run; the message names the construct
    (and Flink's documentation's name for it) in the user's own words. ``code``: what a client
    tells the failure by (``api.table.catalogobjects``' NOT_FOUND...), "" for the rest."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class Column:
    """A column of a catalog table: physical, or computed (``name AS expression``)."""

    name: str
    #: Flink SQL type text, e.g. ``BIGINT``, ``STRING``, ``TIMESTAMP(3)``; None for a computed
    #: column, whose type is the expression's
    type: str | None
    #: a computed column's Flink SQL expression text (``PROCTIME()``, ``price * qty``)
    expression: str | None = None
    comment: str | None = None

    @property
    def is_physical(self) -> bool:
        """True for a column the connector reads and writes."""
        return self.expression is None


@dataclass(slots=True)
class WatermarkSpec:
    """``WATERMARK FOR <rowtime> AS <expression>``."""

    rowtime: str
    expression: str


@dataclass(slots=True)
class CatalogTable:
    """A table of the session's catalog: its schema, its connector's options (``WITH``)."""

    name: str
    columns: list[Column]
    options: dict[str, str] = field(default_factory=dict)
    watermark: WatermarkSpec | None = None
    primary_key: list[str] = field(default_factory=list)
    #: the primary key's ``CONSTRAINT name`` (an ALTER's); None: Flink's ``PK_<columns>``
    primary_key_name: str | None = None
    partition_keys: list[str] = field(default_factory=list)
    temporary: bool = False
    comment: str | None = None
    #: what the connector reads that is no option: a ``datastream`` table's JobGraph and blobs
    #: (a pickled ``SubmitJob``, sent with its CREATE TABLE by ``from_data_stream``)
    payload: bytes = b""

    @property
    def connector(self) -> str:
        """The ``'connector'`` option ('' when missing)."""
        return self.options.get("connector", "")

    @property
    def physical_columns(self) -> list[Column]:
        """The columns a connector reads and writes, in declaration order."""
        return [c for c in self.columns if c.is_physical]


def table_named(tables: dict[str, CatalogTable], name: str) -> CatalogTable | None:
    """The table of ``tables`` (by name as a query wrote it) named ``name``, whatever the case
    (Flink's identifiers are matched without it here, as Spark's); None when there is none."""
    return next((t for n, t in tables.items() if n.lower() == name.lower()), None)
