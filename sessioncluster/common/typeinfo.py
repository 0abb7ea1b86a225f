"""PyFlink's ``Types``: descriptive type information.

Records travel as Python objects (pickled), so a ``TypeInformation`` here only describes a type:
it is accepted wherever PyFlink takes one (``output_type``, state descriptors, ``type_info``), and
compares and prints like PyFlink's.
"""

from __future__ import annotations

import math
import struct
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
    """``value`` as Java's ``toString`` of a record of type ``type_info`` (what Flink's sinks
    write: ``print()``, a FileSink's ``simple_string_encoder``): ``(a,1)`` for a TUPLE,
    ``+I[a, 1]`` for a ROW (Flink's ``Row``), ``true``/``null``/``1.0E7`` for basic values, a
    Float's shortest 32-bit digits. Without type information (PyFlink pickles the records) it is
    Python's ``str(value)`` (Flink's FileSink writes the pickle's ``[B@hash``). As real Flink,
    recorded in ``/work/briefs/data/javaprint/probe_print.out`` and
    ``/work/briefs/data/javaprint2/probe_filesink.out``."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return value if isinstance(value, str) else str(value)
    if value is None:
        return "null"
    if isinstance(type_info, RowTypeInfo):
        fields = ", ".join(java_string(v, t) for v, t in zip(value, type_info.field_types))
        return f"{row_kind(value)}[{fields}]"
    if isinstance(type_info, TupleTypeInfo):
        return "(" + ",".join(java_string(v, t) for v, t in zip(value, type_info.field_types)) + ")"
    if isinstance(type_info, BasicArrayTypeInfo):  # a Java array: its class and identity hash
        return f"{_java_array_class(type_info)}@{id(value) & 0x7FFFFFFF:x}"
    if isinstance(type_info, ListTypeInfo):
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
        if type_info.name == "Float":
            return _java_double(float(value), single=True)
        if type_info.name == "Double":
            return _java_double(float(value))
    return str(value)


def row_kind(row: Any) -> str:
    """The short string of a Row's kind (``+I``, ``-D``...); ``+I`` for a plain sequence."""
    return str(row.get_row_kind()) if hasattr(row, "get_row_kind") else "+I"


#: the JVM's array class names (``Class.getName``) of element types
_JAVA_CLASSES = {"String": "java.lang.String", "Integer": "java.lang.Integer",
                 "Long": "java.lang.Long", "Double": "java.lang.Double", "Float": "java.lang.Float",
                 "Boolean": "java.lang.Boolean", "Short": "java.lang.Short", "Byte": "java.lang.Byte",
                 "Character": "java.lang.Character", "BigInteger": "java.math.BigInteger",
                 "BigDecimal": "java.math.BigDecimal"}
_PRIMITIVE_CODES = {"Integer": "I", "Long": "J", "Double": "D", "Float": "F", "Boolean": "Z",
                    "Short": "S", "Byte": "B", "Character": "C"}


def _java_array_class(type_info: BasicArrayTypeInfo) -> str:
    """``[I``, ``[Ljava.lang.String;``: the name Java's ``Object.toString`` of an array shows."""
    element = type_info.element_type
    name = getattr(element, "name", "")
    if isinstance(type_info, PrimitiveArrayTypeInfo) and name in _PRIMITIVE_CODES:
        return "[" + _PRIMITIVE_CODES[name]
    if isinstance(element, TupleTypeInfo):
        return f"[Lorg.apache.flink.api.java.tuple.Tuple{element.get_arity()};"
    if isinstance(element, RowTypeInfo):
        return "[Lorg.apache.flink.types.Row;"
    return f"[L{_JAVA_CLASSES.get(name, 'java.lang.Object')};"


def _java_double(x: float, single: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` with ``single``): plain in [1e-3, 1e7),
    else ``d.dddE±n``; the shortest digits that read back as the same double (float)."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    text = _shortest_single(x) if single else repr(x)
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        plain = format(Decimal(text), "f")
        return plain if "." in plain else plain + ".0"
    sign, digits, exp = Decimal(text).normalize().as_tuple()
    assert isinstance(exp, int)
    shown = "".join(map(str, digits))
    mantissa = shown[0] + "." + (shown[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{len(digits) + exp - 1}"


def _shortest_single(x: float) -> str:
    """The fewest significant digits that read back as the same 32-bit float as ``x``."""
    target = to_float32(x)
    for digits in range(1, 10):
        text = f"{target:.{digits}g}"
        if to_float32(float(text)) == target:
            return text
    return repr(target)


# -- values of a declared type as they come back from Java -------------------------------------

def to_float32(x: float) -> float:
    """``x`` rounded to Java's 32-bit ``float`` (as a Python float): ``0.1`` ->
    ``0.10000000149011612``; too large a value is infinite, as Java's cast makes it."""
    try:
        return float(struct.unpack("f", struct.pack("f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def has_float(type_info: TypeInformation | None) -> bool:
    """Whether values of ``type_info`` hold a ``Types.FLOAT()`` anywhere."""
    if isinstance(type_info, BasicTypeInfo):
        return type_info.name == "Float" and not isinstance(type_info, PickledBytesTypeInfo)
    if isinstance(type_info, (TupleTypeInfo, RowTypeInfo)):
        return any(has_float(t) for t in type_info.field_types)
    if isinstance(type_info, (ListTypeInfo, BasicArrayTypeInfo)):
        return has_float(type_info.element_type)
    if isinstance(type_info, MapTypeInfo):
        return has_float(type_info.key_type) or has_float(type_info.value_type)
    return False


def as_declared(value: Any, type_info: TypeInformation | None) -> Any:
    """``value`` as it reads back after Flink serialized it as ``type_info`` (a Python value
    crossing Java): every ``Types.FLOAT()`` in it rounded to 32 bits; the rest unchanged."""
    if value is None or not has_float(type_info):
        return value
    if isinstance(type_info, BasicTypeInfo):
        return to_float32(float(value))
    if isinstance(type_info, (TupleTypeInfo, RowTypeInfo)):
        fields = [as_declared(v, t) for v, t in zip(value, type_info.field_types)]
        if hasattr(value, "get_row_kind"):
            return _same_row(value, fields)
        return type(value)(fields) if isinstance(value, list) else tuple(fields)
    if isinstance(type_info, (ListTypeInfo, BasicArrayTypeInfo)):
        return [as_declared(v, type_info.element_type) for v in value]
    if isinstance(type_info, MapTypeInfo):
        return {as_declared(k, type_info.key_type): as_declared(v, type_info.value_type)
                for k, v in value.items()}
    return value


def _same_row(row: Any, fields: list[Any]) -> Any:
    """A Row of ``fields`` with ``row``'s kind and field names."""
    new = type(row)(*fields)
    new.set_row_kind(row.get_row_kind())
    try:
        new.set_field_names(list(row.as_dict()))
    except TypeError:  # a Row without field names
        pass
    return new


# -- type information as plain data (it travels in a JobGraph's operator config) ----------------

def type_spec(type_info: TypeInformation | None) -> Any:
    """``type_info`` as nested tuples of strings (what a message may carry); None for none."""
    if type_info is None:
        return None
    if isinstance(type_info, TupleTypeInfo):
        return ("Tuple", tuple(type_spec(t) for t in type_info.field_types))
    if isinstance(type_info, RowTypeInfo):
        return ("Row", tuple(type_spec(t) for t in type_info.field_types), tuple(type_info.field_names))
    if isinstance(type_info, ListTypeInfo):
        return ("List", type_spec(type_info.element_type))
    if isinstance(type_info, MapTypeInfo):
        return ("Map", type_spec(type_info.key_type), type_spec(type_info.value_type))
    if isinstance(type_info, BasicArrayTypeInfo):
        return (type(type_info).__name__, type_spec(type_info.element_type))
    if isinstance(type_info, BasicTypeInfo):
        return (type(type_info).__name__, type_info.name)
    return ("Pickled",)


_BASIC = {c.__name__: c for c in (BasicTypeInfo, SqlTimeTypeInfo, InstantTypeInfo, PickledBytesTypeInfo)}
_ARRAYS = {c.__name__: c for c in (BasicArrayTypeInfo, PrimitiveArrayTypeInfo, ObjectArrayTypeInfo)}


def from_type_spec(spec: Any) -> TypeInformation | None:
    """The TypeInformation :func:`type_spec` described."""
    if spec is None or spec[0] == "Pickled":
        return None if spec is None else Types.PICKLED_BYTE_ARRAY()
    kind = spec[0]
    if kind == "Tuple":
        return TupleTypeInfo([_spec(s) for s in spec[1]])
    if kind == "Row":
        return RowTypeInfo([_spec(s) for s in spec[1]], list(spec[2]))
    if kind == "List":
        return ListTypeInfo(_spec(spec[1]))
    if kind == "Map":
        return MapTypeInfo(_spec(spec[1]), _spec(spec[2]))
    if kind in _ARRAYS:
        return _ARRAYS[kind](_spec(spec[1]))
    return _BASIC[kind](spec[1])


def _spec(spec: Any) -> TypeInformation:
    t = from_type_spec(spec)
    assert t is not None
    return t


def read_back(spec: Any, timestamped: bool = False) -> Any:
    """A function of a record of the declared type ``spec`` (a :func:`type_spec`) to the value
    Flink's next operator reads when the record crosses Java (an exchange): FLOATs in 32 bits;
    None when the type holds no FLOAT. ``timestamped``: records are ``(timestamp, value)``."""
    type_info = from_type_spec(spec)
    if not has_float(type_info):
        return None
    if timestamped:
        return lambda record: (record[0], as_declared(record[1], type_info))
    return lambda record: as_declared(record, type_info)
