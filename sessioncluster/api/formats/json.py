"""JSON (``pyflink.datastream.formats.json``): ``JsonRowSerializationSchema`` and
``JsonRowDeserializationSchema``, a JSON object per record (e.g. per line of a text file:
``ds.map(schema.deserialize)``; ``ds.map(schema.serialize)`` before a text sink)."""

from __future__ import annotations

import base64
import datetime
import json
import re
from decimal import Decimal
from typing import Any, Callable

from ...common.serialization import DeserializationSchema, SerializationSchema
from ...common.typeinfo import RowTypeInfo, TypeInformation
from ...common.types import Row
from ..table.typeinfotypes import from_type_info
from ..table.types import (
    ArrayType,
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    LocalZonedTimestampType,
    MapType,
    RowType,
    TimestampType,
    TimeType,
)
from .base import java_double


def _check_row_type(type_info: Any) -> RowTypeInfo:
    if not isinstance(type_info, RowTypeInfo):
        raise TypeError(f"the JSON schemas take a Types.ROW_NAMED(...), not {type_info!r}")
    return type_info


def _to_json(value: Any, t: DataType) -> Any:
    if value is None:
        return None
    if isinstance(t, RowType):
        if isinstance(value, dict):
            return {f.name: _to_json(value.get(f.name), f.data_type) for f in t.fields}
        return {f.name: _to_json(v, f.data_type) for f, v in zip(t.fields, value)}
    if isinstance(t, ArrayType):
        return [_to_json(v, t.element_type) for v in value]
    if isinstance(t, MapType):
        return {str(k): _to_json(v, t.value_type) for k, v in value.items()}
    if isinstance(t, BinaryType):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime.datetime):
        return _rfc3339(value, value.isoformat(timespec="seconds")[:19])
    if isinstance(value, datetime.time):
        return _rfc3339(value, value.isoformat(timespec="seconds")[:8])
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value  # a Decimal is written with its digits by _dump


def _rfc3339(value: datetime.datetime | datetime.time, seconds: str) -> str:
    """Flink's JSON timestamps and times: ``2026-11-24T08:00:00.123Z`` (the fraction without
    trailing zeros, none when zero)."""
    fraction = f"{value.microsecond:06d}".rstrip("0")
    return f"{seconds}.{fraction}Z" if fraction else f"{seconds}Z"


#: Jackson writes the control characters that have no short escape as \u00XX, in upper case
_LOWER_HEX_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00(0[bef]|1[a-f])")


def _dump(value: Any) -> str:
    """JSON text as Jackson writes it: no spaces, non-ASCII as it is, a DECIMAL with its digits
    (``12.30``), a double as a number."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        if "\\u00" in text:
            text = _LOWER_HEX_ESCAPE.sub(lambda m: m.group(1) + "\\u00" + m.group(2).upper(), text)
        return text
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else json.dumps(str(value))
    if isinstance(value, dict):
        return "{" + ",".join(f"{_dump(str(k))}:{_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    if isinstance(value, float):
        return java_double(value)
    return json.dumps(value)



def jackson_text(value: Any) -> str:
    """A JSON value (None, bool, str, int, float, Decimal, dict, list) as Jackson writes it
    (shared with the Flink SQL ``json`` format)."""
    return _dump(value)


def _from_json(value: Any, t: DataType, fail_on_missing: bool) -> Any:
    if value is None:
        return None
    if isinstance(t, RowType):
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object for {t}, got {value!r}")
        values = []
        for f in t.fields:
            if f.name not in value and fail_on_missing:
                raise ValueError(f"the field '{f.name}' is missing")
            values.append(_from_json(value.get(f.name), f.data_type, fail_on_missing))
        return Row(*t.field_names())(*values)
    if isinstance(t, ArrayType):
        return [_from_json(v, t.element_type, fail_on_missing) for v in value]
    if isinstance(t, MapType):
        return {k: _from_json(v, t.value_type, fail_on_missing) for k, v in value.items()}
    return _atomic(t)(value)


def _atomic(t: DataType) -> Callable[[Any], Any]:
    if isinstance(t, BinaryType):
        return base64.b64decode
    if isinstance(t, DecimalType):
        return lambda v: v if isinstance(v, Decimal) else Decimal(str(v))
    if isinstance(t, (FloatType, DoubleType)):
        return float
    if isinstance(t, DateType):
        return datetime.date.fromisoformat
    if isinstance(t, TimeType):
        return lambda v: datetime.time.fromisoformat(str(v).removesuffix("Z"))
    if isinstance(t, TimestampType):
        # Flink's JSON: "2026-11-24T08:00:00.123Z" (DataStream) or "2026-11-24 08:00:00.123"
        # (SQL), a timestamp without time zone either way
        return lambda v: datetime.datetime.fromisoformat(str(v).removesuffix("Z"))
    if isinstance(t, LocalZonedTimestampType):
        return lambda v: datetime.datetime.fromisoformat(str(v).replace("Z", "+00:00"))
    return lambda v: v


class JsonRowSerializationSchema(SerializationSchema):
    """A record (a Row of the type's fields, or a dict) as the UTF-8 bytes of a JSON object."""

    def __init__(self, type_info: RowTypeInfo) -> None:
        self.type_info = _check_row_type(type_info)
        self.row_type = from_type_info(type_info)

    @staticmethod
    def builder() -> "JsonRowSerializationSchema.Builder":
        return JsonRowSerializationSchema.Builder()

    def serialize(self, element: Any) -> bytes:
        return _dump(_to_json(element, self.row_type)).encode("utf-8")

    class Builder:
        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None

        def with_type_info(self, type_info: TypeInformation) -> "JsonRowSerializationSchema.Builder":
            self._type_info = type_info
            return self

        def build(self) -> "JsonRowSerializationSchema":
            if self._type_info is None:
                raise TypeError("Typeinfo should be set.")
            return JsonRowSerializationSchema(self._type_info)  # type: ignore[arg-type]


class JsonRowDeserializationSchema(DeserializationSchema):
    """A JSON object (bytes or str) as a Row of the type's fields; a missing field is null unless
    ``fail_on_missing_field``; a message that does not parse raises, or is None with
    ``ignore_parse_errors``."""

    def __init__(self, type_info: RowTypeInfo, fail_on_missing_field: bool = False,
                 ignore_parse_errors: bool = False) -> None:
        self.type_info = _check_row_type(type_info)
        self.row_type = from_type_info(type_info)
        self.fail_on_missing_field = fail_on_missing_field
        self.ignore_parse_errors = ignore_parse_errors

    @staticmethod
    def builder() -> "JsonRowDeserializationSchema.Builder":
        return JsonRowDeserializationSchema.Builder()

    def deserialize(self, message: bytes | str) -> Any:
        try:
            # numbers with a fraction as Decimal: a DECIMAL field keeps its digits (as Jackson's
            # BigDecimal does), a DOUBLE one is converted
            return _from_json(json.loads(message, parse_float=Decimal), self.row_type,
                              self.fail_on_missing_field)
        except (ValueError, TypeError, AttributeError) as exc:
            if self.ignore_parse_errors:
                return None
            shown = message if len(message) <= 200 else message[:200]
            raise ValueError(f"cannot parse the JSON {shown!r}: {exc}") from None

    def get_produced_type(self) -> RowTypeInfo:
        return self.type_info

    class Builder:
        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None
            self._fail_on_missing_field = False
            self._ignore_parse_errors = False

        def type_info(self, type_info: TypeInformation) -> "JsonRowDeserializationSchema.Builder":
            self._type_info = type_info
            return self

        def fail_on_missing_field(self) -> "JsonRowDeserializationSchema.Builder":
            self._fail_on_missing_field = True
            return self

        def ignore_parse_errors(self) -> "JsonRowDeserializationSchema.Builder":
            self._ignore_parse_errors = True
            return self

        def build(self) -> "JsonRowDeserializationSchema":
            if self._type_info is None:
                raise TypeError("Typeinfo should be set.")
            return JsonRowDeserializationSchema(self._type_info,  # type: ignore[arg-type]
                                                self._fail_on_missing_field,
                                                self._ignore_parse_errors)
