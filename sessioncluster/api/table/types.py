"""PyFlink's data types (``pyflink.table.types``): ``DataTypes.ROW([DataTypes.FIELD(...)])``.

A pure module (no Spark): a DataType describes a column; it converts to a pyarrow type
(``to_arrow``), to Spark's DDL (``spark_ddl``), to Flink SQL's text (``str``) and to the
``TypeInformation`` of a DataStream record (``to_type_info``, ``Types.ROW_NAMED`` for a ROW).
Python values are PyFlink's: ``int``, ``float``, ``Decimal``, ``str``, ``bytes``,
``datetime.date``/``time``/``datetime``, ``list``, ``dict`` and ``Row``.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ...common.typeinfo import (
    RowTypeInfo,
    TypeInformation,
    Types,
)
from .datatype import AtomicType, DataType
from .intervaltypes import DayTimeIntervalType, Resolution, YearMonthIntervalType, interval


class NullType(AtomicType):
    sql_name = "NULL"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.null()

    def spark_ddl(self) -> str:
        return "VOID"

    def to_type_info(self) -> TypeInformation:
        return Types.PICKLED_BYTE_ARRAY()


class BooleanType(AtomicType):
    sql_name = "BOOLEAN"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.bool_()

    def to_type_info(self) -> TypeInformation:
        return Types.BOOLEAN()


class NumericType(AtomicType):
    """A number."""


class IntegralType(NumericType):
    _bits = 32
    _info = "INT"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return getattr(pa, f"int{self._bits}")()

    def to_type_info(self) -> TypeInformation:
        return getattr(Types, self._info)()


class TinyIntType(IntegralType):
    sql_name, _bits, _info = "TINYINT", 8, "BYTE"


class SmallIntType(IntegralType):
    sql_name, _bits, _info = "SMALLINT", 16, "SHORT"


class IntType(IntegralType):
    sql_name, _bits, _info = "INT", 32, "INT"


class BigIntType(IntegralType):
    sql_name, _bits, _info = "BIGINT", 64, "LONG"


class FractionalType(NumericType):
    """A floating-point or decimal number."""


class FloatType(FractionalType):
    sql_name = "FLOAT"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.float32()

    def to_type_info(self) -> TypeInformation:
        return Types.FLOAT()


class DoubleType(FractionalType):
    sql_name = "DOUBLE"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.float64()

    def to_type_info(self) -> TypeInformation:
        return Types.DOUBLE()


class DecimalType(FractionalType):
    sql_name = "DECIMAL"

    def __init__(self, precision: int = 10, scale: int = 0, nullable: bool = True) -> None:
        super().__init__(nullable)
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise ValueError(f"DECIMAL({precision}, {scale}): the precision must be 1..38 and the "
                             "scale 0..precision")
        self.precision = precision
        self.scale = scale

    def _args(self) -> tuple[Any, ...]:
        return (self.precision, self.scale)

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.decimal128(self.precision, self.scale)

    def to_type_info(self) -> TypeInformation:
        return Types.BIG_DEC()


class _Sized(AtomicType):
    """CHAR, VARCHAR, BINARY, VARBINARY: a length."""

    #: the largest length: VARCHAR(MAX) is STRING, VARBINARY(MAX) is BYTES
    MAX = 2147483647

    def __init__(self, length: int = 1, nullable: bool = True) -> None:
        super().__init__(nullable)
        if length < 1:
            raise ValueError(f"{self.sql_name}'s length must be positive, not {length}")
        self.length = length

    def _args(self) -> tuple[Any, ...]:
        return (self.length,)


class CharType(_Sized):
    sql_name = "CHAR"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.string()

    def spark_ddl(self) -> str:
        return "STRING"

    def to_type_info(self) -> TypeInformation:
        return Types.STRING()


class VarCharType(CharType):
    sql_name = "VARCHAR"

    def _sql(self) -> str:
        return "STRING" if self.length == self.MAX else super()._sql()


class BinaryType(_Sized):
    sql_name = "BINARY"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.binary()

    def spark_ddl(self) -> str:
        return "BINARY"

    def to_type_info(self) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())


class VarBinaryType(BinaryType):
    sql_name = "VARBINARY"

    def _sql(self) -> str:
        return "BYTES" if self.length == self.MAX else super()._sql()


class DateType(AtomicType):
    sql_name = "DATE"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.date32()

    def to_type_info(self) -> TypeInformation:
        return Types.SQL_DATE()


class _Precise(AtomicType):
    """TIME and the timestamps: a precision of fractional seconds."""

    _default = 6

    def __init__(self, precision: int | None = None, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.precision = self._default if precision is None else precision
        if not 0 <= self.precision <= 9:
            raise ValueError(f"{self.sql_name}'s precision must be 0..9, not {self.precision}")

    def _args(self) -> tuple[Any, ...]:
        return (self.precision,)

    def _unit(self) -> str:
        return "s" if self.precision == 0 else "ms" if self.precision <= 3 else "us" \
            if self.precision <= 6 else "ns"


class TimeType(_Precise):
    sql_name = "TIME"
    _default = 0

    def to_arrow(self) -> Any:
        import pyarrow as pa
        unit = self._unit()
        return pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)

    def spark_ddl(self) -> str:
        return "STRING"  # Spark has no TIME type before 4.1: a time is its ISO text there

    def to_type_info(self) -> TypeInformation:
        return Types.SQL_TIME()


class TimestampType(_Precise):
    """TIMESTAMP(p): a date and time without time zone (``datetime.datetime``, naive)."""

    sql_name = "TIMESTAMP"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.timestamp(self._unit())

    def spark_ddl(self) -> str:
        return "TIMESTAMP_NTZ"

    def to_type_info(self) -> TypeInformation:
        return Types.SQL_TIMESTAMP()


class LocalZonedTimestampType(_Precise):
    """TIMESTAMP_LTZ(p): an instant, shown in the session's time zone."""

    sql_name = "TIMESTAMP_LTZ"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.timestamp(self._unit(), tz="UTC")

    def spark_ddl(self) -> str:
        return "TIMESTAMP"

    def to_type_info(self) -> TypeInformation:
        return Types.INSTANT()


class ArrayType(DataType):
    sql_name = "ARRAY"

    def __init__(self, element_type: DataType, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.element_type = _check(element_type, "ARRAY")

    def _args(self) -> tuple[Any, ...]:
        return (self.element_type,)

    def _sql(self) -> str:
        return f"ARRAY<{self.element_type}>"

    def spark_ddl(self) -> str:
        return f"ARRAY<{self.element_type.spark_ddl()}>"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.list_(self.element_type.to_arrow())

    def to_type_info(self) -> TypeInformation:
        return Types.LIST(self.element_type.to_type_info())


class MapType(DataType):
    sql_name = "MAP"

    def __init__(self, key_type: DataType, value_type: DataType, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.key_type = _check(key_type, "MAP")
        self.value_type = _check(value_type, "MAP")

    def _args(self) -> tuple[Any, ...]:
        return (self.key_type, self.value_type)

    def _sql(self) -> str:
        return f"MAP<{self.key_type}, {self.value_type}>"

    def spark_ddl(self) -> str:
        return f"MAP<{self.key_type.spark_ddl()}, {self.value_type.spark_ddl()}>"

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.map_(self.key_type.to_arrow(), self.value_type.to_arrow())

    def to_type_info(self) -> TypeInformation:
        return Types.MAP(self.key_type.to_type_info(), self.value_type.to_type_info())


class _ViewType(DataType):
    """The type of a data view in an aggregate function's accumulator (:mod:`.dataview`): an
    accumulator's type only, never a column's."""

    def _refused(self) -> Any:
        raise ValueError(f"{self.sql_name} is the type of a data view in an accumulator only "
                         "(DataTypes.ROW of the accumulator_type), not of a column")

    spark_ddl = to_arrow = to_type_info = _refused


class ListViewType(_ViewType):
    """``DataTypes.LIST_VIEW(element_type)``: a :class:`.dataview.ListView`."""

    sql_name = "LISTVIEW"

    def __init__(self, element_type: DataType, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.element_type = _check(element_type, "LIST_VIEW")

    def _sql(self) -> str:  # Flink prints the view's name only
        return self.sql_name


class MapViewType(_ViewType):
    """``DataTypes.MAP_VIEW(key_type, value_type)``: a :class:`.dataview.MapView`."""

    sql_name = "MAPVIEW"

    def __init__(self, key_type: DataType, value_type: DataType, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.key_type = _check(key_type, "MAP_VIEW")
        self.value_type = _check(value_type, "MAP_VIEW")

    def _sql(self) -> str:
        return self.sql_name


class MultisetType(DataType):
    """A bag of values, each with its count (``COLLECT``'s result); Spark holds it as a map of
    each value to its count, which is also how PyFlink gives it to Python (a ``dict``)."""

    sql_name = "MULTISET"

    def __init__(self, element_type: DataType, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.element_type = _check(element_type, "MULTISET")

    def _args(self) -> tuple[Any, ...]:
        return (self.element_type,)

    def _sql(self) -> str:
        return f"MULTISET<{self.element_type}>"

    def spark_ddl(self) -> str:
        # a table's column of this type has no Spark equivalent to read or write it as
        raise ValueError("The type MULTISET has no Spark equivalent")

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.map_(self.element_type.to_arrow(), pa.int32())

    def to_type_info(self) -> TypeInformation:
        return Types.MAP(self.element_type.to_type_info(), Types.INT())


class RowField:
    """A named field of a ROW (``DataTypes.FIELD(name, data_type, description)``)."""

    def __init__(self, name: str, data_type: DataType, description: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a field name must be a non-empty str, not {name!r}")
        self.name = name
        self.data_type = _check(data_type, "FIELD")
        self.description = description

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowField) and (self.name, self.data_type, self.description) == (
            other.name, other.data_type, other.description)

    def __hash__(self) -> int:
        return hash((self.name, self.data_type))

    def __str__(self) -> str:
        return f"`{self.name}` {self.data_type}"

    def __repr__(self) -> str:
        return f"RowField({self.name}, {self.data_type!r})"


class RowType(DataType):
    """ROW<...>: named fields. Iterating gives the fields; ``row_type['name']`` one of them."""

    sql_name = "ROW"

    def __init__(self, fields: Sequence[RowField] | None = None, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.fields = list(fields or [])
        for f in self.fields:
            if not isinstance(f, RowField):
                raise TypeError(f"DataTypes.ROW takes DataTypes.FIELD(name, type)s, not {f!r}")
        names = self.field_names()
        if len(set(names)) != len(names):
            raise ValueError(f"a ROW's field names must be unique: {names}")

    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field_types(self) -> list[DataType]:
        return [f.data_type for f in self.fields]

    def __iter__(self) -> Iterator[RowField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, key: int | str) -> RowField:
        if isinstance(key, int):
            return self.fields[key]
        for f in self.fields:
            if f.name == key:
                return f
        raise KeyError(f"no field {key!r} in {self}")

    def _args(self) -> tuple[Any, ...]:
        return tuple(self.fields)

    def _sql(self) -> str:
        return f"ROW<{', '.join(map(str, self.fields))}>"

    def spark_ddl(self) -> str:
        return f"STRUCT<{', '.join(f'`{f.name}`: {f.data_type.spark_ddl()}' for f in self.fields)}>"

    def spark_schema(self) -> str:
        """The DDL of a Spark schema with these fields as columns (``a INT NOT NULL, b STRING``)."""
        return ", ".join(f"`{f.name}` {f.data_type.spark_ddl()}"
                         + ("" if f.data_type.is_nullable else " NOT NULL") for f in self.fields)

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.struct(self.arrow_fields())

    def arrow_fields(self) -> list[Any]:
        import pyarrow as pa
        return [pa.field(f.name, f.data_type.to_arrow(), nullable=f.data_type.is_nullable)
                for f in self.fields]

    def arrow_schema(self) -> Any:
        """A pyarrow schema with these fields as columns."""
        import pyarrow as pa
        return pa.schema(self.arrow_fields())

    def to_type_info(self) -> RowTypeInfo:
        return Types.ROW_NAMED(self.field_names(), [t.to_type_info() for t in self.field_types()])


def _check(t: Any, where: str) -> DataType:
    if not isinstance(t, DataType):
        raise TypeError(f"DataTypes.{where} takes DataTypes (e.g. DataTypes.INT()), not {t!r}")
    return t


class DataTypes:
    """PyFlink's ``DataTypes``: factories of DataType."""

    @staticmethod
    def NULL() -> NullType:
        return NullType()

    @staticmethod
    def CHAR(length: int, nullable: bool = True) -> CharType:
        return CharType(length, nullable)

    @staticmethod
    def VARCHAR(length: int, nullable: bool = True) -> VarCharType:
        return VarCharType(length, nullable)

    @staticmethod
    def STRING(nullable: bool = True) -> VarCharType:
        return VarCharType(VarCharType.MAX, nullable)

    @staticmethod
    def BOOLEAN(nullable: bool = True) -> BooleanType:
        return BooleanType(nullable)

    @staticmethod
    def BINARY(length: int, nullable: bool = True) -> BinaryType:
        return BinaryType(length, nullable)

    @staticmethod
    def VARBINARY(length: int, nullable: bool = True) -> VarBinaryType:
        return VarBinaryType(length, nullable)

    @staticmethod
    def BYTES(nullable: bool = True) -> VarBinaryType:
        return VarBinaryType(VarBinaryType.MAX, nullable)

    @staticmethod
    def DECIMAL(precision: int, scale: int, nullable: bool = True) -> DecimalType:
        return DecimalType(precision, scale, nullable)

    @staticmethod
    def TINYINT(nullable: bool = True) -> TinyIntType:
        return TinyIntType(nullable)

    @staticmethod
    def SMALLINT(nullable: bool = True) -> SmallIntType:
        return SmallIntType(nullable)

    @staticmethod
    def INT(nullable: bool = True) -> IntType:
        return IntType(nullable)

    @staticmethod
    def BIGINT(nullable: bool = True) -> BigIntType:
        return BigIntType(nullable)

    @staticmethod
    def FLOAT(nullable: bool = True) -> FloatType:
        return FloatType(nullable)

    @staticmethod
    def DOUBLE(nullable: bool = True) -> DoubleType:
        return DoubleType(nullable)

    @staticmethod
    def DATE(nullable: bool = True) -> DateType:
        return DateType(nullable)

    @staticmethod
    def TIME(precision: int = 0, nullable: bool = True) -> TimeType:
        return TimeType(precision, nullable)

    @staticmethod
    def TIMESTAMP(precision: int = 6, nullable: bool = True) -> TimestampType:
        return TimestampType(precision, nullable)

    @staticmethod
    def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> LocalZonedTimestampType:
        return LocalZonedTimestampType(precision, nullable)

    @staticmethod
    def TIMESTAMP_WITH_LOCAL_TIME_ZONE(precision: int = 6, nullable: bool = True
                                       ) -> LocalZonedTimestampType:
        return LocalZonedTimestampType(precision, nullable)

    @staticmethod
    def ARRAY(element_type: DataType, nullable: bool = True) -> ArrayType:
        return ArrayType(element_type, nullable)

    @staticmethod
    def MAP(key_type: DataType, value_type: DataType, nullable: bool = True) -> MapType:
        return MapType(key_type, value_type, nullable)

    @staticmethod
    def MULTISET(element_type: DataType, nullable: bool = True) -> MultisetType:
        return MultisetType(element_type, nullable)

    @staticmethod
    def LIST_VIEW(element_type: DataType) -> ListViewType:
        """A ListView in an aggregate function's accumulator type."""
        return ListViewType(element_type)

    @staticmethod
    def MAP_VIEW(key_type: DataType, value_type: DataType) -> MapViewType:
        """A MapView in an aggregate function's accumulator type."""
        return MapViewType(key_type, value_type)

    @staticmethod
    def SECOND(precision: int = 6) -> Resolution:
        """An interval's resolution in seconds with ``precision`` fractional digits (0..9)."""
        return Resolution(Resolution.IntervalUnit.SECOND, precision)

    @staticmethod
    def MINUTE() -> Resolution:
        return Resolution(Resolution.IntervalUnit.MINUTE)

    @staticmethod
    def HOUR() -> Resolution:
        return Resolution(Resolution.IntervalUnit.HOUR)

    @staticmethod
    def DAY(precision: int = 2) -> Resolution:
        """An interval's resolution in days with ``precision`` digits (1..6)."""
        return Resolution(Resolution.IntervalUnit.DAY, precision)

    @staticmethod
    def MONTH() -> Resolution:
        return Resolution(Resolution.IntervalUnit.MONTH)

    @staticmethod
    def YEAR(precision: int = 2) -> Resolution:
        """An interval's resolution in years with ``precision`` digits (1..4)."""
        return Resolution(Resolution.IntervalUnit.YEAR, precision)

    @staticmethod
    def INTERVAL(upper_resolution: Resolution, lower_resolution: Resolution | None = None
                 ) -> DayTimeIntervalType | YearMonthIntervalType:
        """A day-time or year-month interval (``INTERVAL(DAY(2), SECOND(9))``)."""
        return interval(upper_resolution, lower_resolution)

    @staticmethod
    def FIELD(name: str, data_type: DataType, description: str | None = None) -> RowField:
        return RowField(name, data_type, description)

    @staticmethod
    def ROW(row_fields: Sequence[RowField] | None = None, nullable: bool = True) -> RowType:
        return RowType(row_fields, nullable)
