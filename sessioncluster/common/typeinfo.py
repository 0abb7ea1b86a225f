"""PyFlink's ``Types``: descriptive type information.

Records travel as Python objects (pickled), so a ``TypeInformation`` here only describes a type:
it is accepted wherever PyFlink takes one (``output_type``, state descriptors, ``type_info``), and
compares and prints like PyFlink's.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Sequence


class TypeInformation:
    """The type of a record or field (PyFlink's ``pyflink.common.typeinfo.TypeInformation``)."""

    def _key(self) -> tuple[Any, ...]:
        return (type(self),)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInformation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class BasicTypeInfo(TypeInformation):
    """A basic type: ``String``, ``Integer``, ``Long``, ``Double``, ..."""

    def __init__(self, name: str, python_type: type | None = None) -> None:
        self.name = name
        self.python_type = python_type

    def _key(self) -> tuple[Any, ...]:
        return (BasicTypeInfo, self.name)

    def __repr__(self) -> str:
        return self.name


class SqlTimeTypeInfo(BasicTypeInfo):
    """``Date``, ``Time`` or ``Timestamp``."""


class InstantTypeInfo(BasicTypeInfo):
    """``Instant``."""


class PickledBytesTypeInfo(BasicTypeInfo):
    """Any picklable Python object."""


class TupleTypeInfo(TypeInformation):
    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        self.field_types = list(_check_all(field_types, "TUPLE"))

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    def get_arity(self) -> int:
        return len(self.field_types)

    def _key(self) -> tuple[Any, ...]:
        return (TupleTypeInfo, tuple(self.field_types))

    def __repr__(self) -> str:
        return f"TupleTypeInfo({', '.join(map(repr, self.field_types))})"


class RowTypeInfo(TypeInformation):
    def __init__(self, field_types: Sequence[TypeInformation],
                 field_names: Sequence[str] | None = None) -> None:
        self.field_types = list(_check_all(field_types, "ROW"))
        if field_names is None:
            field_names = [f"f{i}" for i in range(len(self.field_types))]
        field_names = list(field_names)
        if len(field_names) != len(self.field_types):
            raise ValueError(f"ROW_NAMED needs as many names as types: {len(field_names)} names, "
                             f"{len(self.field_types)} types")
        if not all(isinstance(n, str) for n in field_names):
            raise TypeError(f"field names must be str: {field_names!r}")
        self.field_names = field_names

    def get_field_names(self) -> list[str]:
        return list(self.field_names)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    def get_field_index(self, field_name: str) -> int:
        return self.field_names.index(field_name) if field_name in self.field_names else -1

    def get_arity(self) -> int:
        return len(self.field_types)

    def _key(self) -> tuple[Any, ...]:
        return (RowTypeInfo, tuple(self.field_types), tuple(self.field_names))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}: {t!r}" for n, t in zip(self.field_names, self.field_types))
        return f"RowTypeInfo({fields})"


class ListTypeInfo(TypeInformation):
    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = _check(element_type, "LIST")

    def _key(self) -> tuple[Any, ...]:
        return (ListTypeInfo, self.element_type)

    def __repr__(self) -> str:
        return f"ListTypeInfo<{self.element_type!r}>"


class MapTypeInfo(TypeInformation):
    def __init__(self, key_type: TypeInformation, value_type: TypeInformation) -> None:
        self.key_type = _check(key_type, "MAP")
        self.value_type = _check(value_type, "MAP")

    def _key(self) -> tuple[Any, ...]:
        return (MapTypeInfo, self.key_type, self.value_type)

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self.key_type!r}, {self.value_type!r}>"


class BasicArrayTypeInfo(TypeInformation):
    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = _check(element_type, "BASIC_ARRAY")

    def _key(self) -> tuple[Any, ...]:
        return (type(self), self.element_type)

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.element_type!r}>"


class PrimitiveArrayTypeInfo(BasicArrayTypeInfo):
    pass


class ObjectArrayTypeInfo(BasicArrayTypeInfo):
    pass


def _check(t: Any, where: str) -> TypeInformation:
    if not isinstance(t, TypeInformation):
        raise TypeError(f"Types.{where} takes TypeInformation (e.g. Types.STRING()), not {t!r}")
    return t


def _check_all(ts: Sequence[Any], where: str) -> list[TypeInformation]:
    if isinstance(ts, (str, bytes)) or not isinstance(ts, Sequence):
        raise TypeError(f"Types.{where} takes a list of TypeInformation, not {ts!r}")
    return [_check(t, where) for t in ts]


class Types:
    """PyFlink's ``Types``: factories of TypeInformation."""

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo("String", str)

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo("Byte", int)

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo("Boolean", bool)

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo("Short", int)

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo("Integer", int)

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo("Long", int)

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo("Float", float)

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo("Double", float)

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo("Character", str)

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo("BigInteger", int)

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo("BigDecimal")

    @staticmethod
    def INSTANT() -> TypeInformation:
        return InstantTypeInfo("Instant")

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return SqlTimeTypeInfo("Date")

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return SqlTimeTypeInfo("Time")

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return SqlTimeTypeInfo("Timestamp")

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo("PickledByteArray")

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> RowTypeInfo:
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: Sequence[str], field_types: Sequence[TypeInformation]) -> RowTypeInfo:
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TupleTypeInfo:
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type_info)


# -- records as Flink prints them ------------------------------------------------------------------

def java_string(value: Any, type_info: TypeInformation | None = None) -> str:
    """``value`` as Flink's ``print()`` and ``Encoder.simple_string_encoder()`` write a record of
    type ``type_info`` (Java's ``toString``): ``(a,1)`` for a TUPLE, ``+I[a, 1]`` for a ROW,
    ``true``/``null``/``1.0E7`` for basic values. Without type information (PyFlink then pickles
    records) it is Python's ``str(value)``, as PyFlink prints such records."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return str(value)
    if value is None:
        return "null"
    if isinstance(type_info, TupleTypeInfo):
        return "(" + ",".join(java_string(v, t) for v, t in zip(value, type_info.field_types)) + ")"
    if isinstance(type_info, RowTypeInfo):
        kind = value.get_row_kind().short_string() if hasattr(value, "get_row_kind") else "+I"
        return kind + "[" + ", ".join(java_string(v, t)
                                      for v, t in zip(value, type_info.field_types)) + "]"
    if isinstance(type_info, (ListTypeInfo, BasicArrayTypeInfo)):
        return "[" + ", ".join(java_string(v, type_info.element_type) for v in value) + "]"
    if isinstance(type_info, MapTypeInfo):
        return "{" + ", ".join(f"{java_string(k, type_info.key_type)}={java_string(v, type_info.value_type)}"
                               for k, v in value.items()) + "}"
    if isinstance(type_info, SqlTimeTypeInfo) and type_info.name == "Timestamp":
        fraction = f"{value.microsecond / 1e6:.6f}"[1:].rstrip("0")
        return value.strftime("%Y-%m-%d %H:%M:%S") + (fraction if fraction != "." else ".0")
    if isinstance(type_info, BasicTypeInfo):
        if type_info.name == "Boolean":
            return "true" if value else "false"
        if type_info.name in ("Float", "Double"):
            return _java_double(float(value))
    return str(value)


def _java_double(x: float) -> str:
    """Java's ``Double.toString``: plain in [1e-3, 1e7), else ``d.dddE±n``; shortest digits."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "e" not in text else format(x, "f")
    sign, digits, exp = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exp, int)
    shown = "".join(map(str, digits))
    mantissa = shown[0] + "." + (shown[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{len(digits) + exp - 1}"
