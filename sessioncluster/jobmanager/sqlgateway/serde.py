"""Results as Flink's SQL Gateway writes them (``ResultInfoSerializer``): the columns with their
logical types (``LogicalTypeJsonSerializer``), and each row's ``{"kind", "fields"}`` in the
``JSON`` row format (Flink's JSON format with ISO-8601 timestamps) or ``PLAIN_TEXT`` (every
field cast to a string). Pure: no Spark, no I/O."""

from __future__ import annotations

import base64
import datetime
import decimal
import math
from enum import Enum
from typing import Any, Sequence

from ...api.table.datatype import DataType
from ...api.table.result import cell_string, without_marker
from ...api.table.typeparser import parse_type
from ...api.table.types import (
    ArrayType,
    BinaryType,
    CharType,
    DecimalType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    TimestampType,
    TimeType,
)
from ...common.types import Row, RowKind

#: what a type the parser does not know (an INTERVAL) is given as: its values as text
_UNKNOWN = {"type": "VARCHAR", "nullable": True, "length": 2147483647}


class RowFormat(Enum):
    """The ``rowFormat`` of a fetch: JSON values, or every value as a string."""

    JSON = "JSON"
    PLAIN_TEXT = "PLAIN_TEXT"


def data_type(type_text: str) -> DataType | None:
    """A column's Flink SQL type text as a DataType; None when it is not one the parser knows."""
    try:
        return parse_type(without_marker(type_text))
    except (ValueError, TypeError):
        return None


def logical_type_json(t: DataType | None) -> dict[str, Any]:
    """``t`` as Flink's ``LogicalTypeJsonSerializer`` writes it."""
    if t is None:
        return dict(_UNKNOWN)
    root = t.type_root()
    if root == "NULL":
        return {"type": "NULL"}
    out: dict[str, Any] = {"type": root, "nullable": t.is_nullable}
    if isinstance(t, (CharType, BinaryType)):
        out["length"] = t.length
    elif isinstance(t, DecimalType):
        out["precision"], out["scale"] = t.precision, t.scale
    elif isinstance(t, (TimeType, TimestampType, LocalZonedTimestampType)):
        out["precision"] = t.precision
    elif isinstance(t, MapType):
        out["keyType"] = logical_type_json(t.key_type)
        out["valueType"] = logical_type_json(t.value_type)
    elif isinstance(t, (ArrayType, MultisetType)):
        out["elementType"] = logical_type_json(t.element_type)
    elif isinstance(t, RowType):
        out["fields"] = [{"name": f.name, "fieldType": logical_type_json(f.data_type),
                          **({"description": f.description} if f.description else {})}
                         for f in t.fields]
    return out


def column_infos(names: Sequence[str], types: Sequence[str]) -> list[dict[str, Any]]:
    """The ``columns`` of a result: name, logical type, comment."""
    padded = list(types) + [""] * (len(names) - len(types))
    return [{"name": n, "logicalType": logical_type_json(data_type(t) if t else None),
             "comment": None} for n, t in zip(names, padded)]


def _fraction(microseconds: int) -> str:
    digits = f"{microseconds:06d}".rstrip("0")
    return "." + digits if digits else ""


def json_field(v: Any, t: DataType | None) -> Any:
    """One value as Flink's JSON format writes it (``RowDataToJsonConverters``, ISO-8601)."""
    if v is None:
        return None
    if isinstance(v, bool) or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else ("NaN" if v != v else "Infinity" if v > 0
                                           else "-Infinity")
    if isinstance(v, decimal.Decimal):
        f = float(v)  # a JSON number; as text where a double cannot carry its digits
        return f if decimal.Decimal(repr(f)) == v else format(v, "f")
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        text = v.strftime("%Y-%m-%dT%H:%M:%S") + _fraction(v.microsecond)
        return text + "Z" if isinstance(t, LocalZonedTimestampType) else text
    if isinstance(v, datetime.time):
        return v.strftime("%H:%M:%S") + _fraction(v.microsecond)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dict):
        key_t = t.key_type if isinstance(t, MapType) else None
        value_t = t.value_type if isinstance(t, MapType) else None
        return {_json_key(json_field(k, key_t)): json_field(x, value_t) for k, x in v.items()}
    if isinstance(t, RowType) or isinstance(v, Row):
        return _row_object(v, t if isinstance(t, RowType) else None)
    if isinstance(v, (list, tuple)):
        element = t.element_type if isinstance(t, (ArrayType, MultisetType)) else None
        return [json_field(x, element) for x in v]
    return str(v)


def _json_key(k: Any) -> str:
    return "null" if k is None else k if isinstance(k, str) else str(k)


def _row_object(v: Any, t: RowType | None) -> dict[str, Any] | list[Any]:
    """A ROW value as a JSON object of its fields (a list when its fields have no names)."""
    if t is not None:
        return {f.name: json_field(x, f.data_type) for f, x in zip(t.fields, v)}
    try:
        return {str(k): json_field(x, None) for k, x in v.as_dict().items()}
    except (AttributeError, TypeError):
        return [json_field(x, None) for x in v]


def plain_text_field(v: Any, type_text: str) -> str | None:
    """One value cast to a string, as Flink's ``CAST(v AS STRING)`` writes it (null stays
    null)."""
    return None if v is None else cell_string(v, type_text)


def result_info(names: Sequence[str], types: Sequence[str],
                rows: Sequence[tuple[RowKind, Sequence[Any]]], row_format: RowFormat
                ) -> dict[str, Any]:
    """A fetch's ``results``: ``{"columns", "rowFormat", "data"}``."""
    columns = column_infos(names, types)
    if row_format is RowFormat.JSON:
        parsed = [data_type(t) for t in types]
        parsed += [None] * (len(names) - len(parsed))
        data = [{"kind": kind.name, "fields": [json_field(x, t) for x, t in zip(values, parsed)]}
                for kind, values in rows]
    else:
        texts = list(types) + [""] * (len(names) - len(types))
        data = [{"kind": kind.name,
                 "fields": [plain_text_field(x, t) for x, t in zip(values, texts)]}
                for kind, values in rows]
    return {"columns": columns, "rowFormat": row_format.value, "data": data}
