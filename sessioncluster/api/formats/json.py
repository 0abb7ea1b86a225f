"""JSON (``pyflink.datastream.formats.json``): ``JsonRowSerializationSchema`` and
``JsonRowDeserializationSchema``, a JSON object per record (e.g. per line of a text file:
``ds.map(schema.deserialize)``; ``ds.map(schema.serialize)`` before a text sink)."""

from __future__ import annotations

import base64
import datetime
import json
from decimal import Decimal
from typing import Any, Callable

from ...common.serialization import DeserializationSchema, SerializationSchema
from ...common.typeinfo import RowTypeInfo, TypeInformation
from ...common.types import Row
from ..table.types import (
    ArrayType,
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    LocalZonedTimestampType,
    MapType,
    RowType,
    TimestampType,
    TimeType,
    from_type_info,
)


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
    if isinstance(value, Decimal):
        return float(value) if value != value.to_integral_value() else int(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return value


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
        return lambda v: Decimal(str(v))
    if isinstance(t, DateType):
        return datetime.date.fromisoformat
    if isinstance(t, TimeType):
        return datetime.time.fromisoformat
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
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
        return json.dumps(_to_json(element, self.row_type), ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")

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
            return _from_json(json.loads(message), self.row_type, self.fail_on_missing_field)
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
