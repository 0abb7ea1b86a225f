"""The base of PyFlink's data types: :class:`DataType` (a logical type and its nullability,
written as Flink SQL's text by ``str``) and :class:`AtomicType`; the types themselves are in
:mod:`.types` and :mod:`.intervaltypes`."""

from __future__ import annotations

from typing import Any

from ...common.typeinfo import TypeInformation

#: Flink's ``LogicalTypeRoot`` of the SQL names that differ from it (the rest are the same)
LOGICAL_TYPE_ROOTS = {"INT": "INTEGER", "TIME": "TIME_WITHOUT_TIME_ZONE",
                      "TIMESTAMP": "TIMESTAMP_WITHOUT_TIME_ZONE",
                      "TIMESTAMP_LTZ": "TIMESTAMP_WITH_LOCAL_TIME_ZONE"}


class DataType:
    """The type of a value in the Table API: a logical type and its nullability."""

    #: Flink SQL's name of the type (``INT``, ``VARCHAR``, ...)
    sql_name = ""

    def __init__(self, nullable: bool = True) -> None:
        self._nullable = nullable

    def nullable(self) -> "DataType":
        """This type, nullable."""
        return self._with_nullable(True)

    def not_null(self) -> "DataType":
        """This type, NOT NULL."""
        return self._with_nullable(False)

    def _with_nullable(self, nullable: bool) -> "DataType":
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy._nullable = nullable
        return copy

    @property
    def is_nullable(self) -> bool:
        return self._nullable

    def type_name(self) -> str:
        return self.sql_name

    def type_root(self) -> str:
        """Flink's ``LogicalTypeRoot`` of the type (``INTEGER``, ``TIMESTAMP_WITHOUT_TIME_ZONE``)."""
        return LOGICAL_TYPE_ROOTS.get(self.type_name(), self.type_name())

    def _args(self) -> tuple[Any, ...]:
        return ()

    def _sql(self) -> str:
        args = self._args()
        return self.sql_name + (f"({', '.join(map(str, args))})" if args else "")

    def __str__(self) -> str:
        return self._sql() + ("" if self._nullable else " NOT NULL")

    def __repr__(self) -> str:
        args = [repr(a) for a in self._args()] + [str(self._nullable).lower()]
        return f"{type(self).__name__}({', '.join(args)})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(str(self))

    def to_arrow(self) -> Any:
        """The pyarrow type of this type."""
        raise NotImplementedError

    def spark_ddl(self) -> str:
        """Spark SQL's name of this type (``INT``, ``ARRAY<STRING>``, ...)."""
        return self._sql()

    def to_type_info(self) -> TypeInformation:
        """The DataStream ``TypeInformation`` of values of this type (PyFlink's legacy type)."""
        raise NotImplementedError


class AtomicType(DataType):
    """A type without components."""
