"""Avro (``pyflink.datastream.formats.avro``) with fastavro: ``AvroSchema``, ``AvroInputFormat``,
``AvroWriters``. Records are Avro generic records, as PyFlink gives them: dicts of the schema's
fields (a writer also takes Rows, their fields in the schema's order)."""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Callable, Iterator

from ...common.serialization import BulkWriter, BulkWriterFactory
from ...common.typeinfo import RowTypeInfo
from ..table.types import DataType, DataTypes, MapType, RowType
from .base import (
    BulkFormat,
    FileFormatError,
    open_file,
    read_errors_named,
)


class AvroSchema:
    """An Avro schema (PyFlink's ``AvroSchema``): ``AvroSchema.parse_string(json)``."""

    def __init__(self, schema: Any) -> None:
        import fastavro

        self.json = schema
        try:
            self.parsed = fastavro.parse_schema(schema)
        except Exception as exc:  # noqa: BLE001 - fastavro's schema errors are of many kinds
            raise ValueError(f"not an Avro schema: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def parse_string(json_schema: str) -> "AvroSchema":
        return AvroSchema(json.loads(json_schema))

    @staticmethod
    def parse_file(file_path: str) -> "AvroSchema":
        with open(file_path, encoding="utf-8") as f:
            return AvroSchema(json.load(f))

    def field_names(self) -> list[str]:
        return [f["name"] for f in self.json.get("fields", [])] if isinstance(self.json, dict) else []

    def __getstate__(self) -> Any:
        return self.json

    def __setstate__(self, state: Any) -> None:
        self.__init__(state)  # type: ignore[misc]

    def __str__(self) -> str:
        return json.dumps(self.json, separators=(",", ":"))

    __repr__ = __str__


# -- Avro types as data types ---------------------------------------------------------------------

_PRIMITIVE: dict[str, Callable[[], DataType]] = {
              "boolean": DataTypes.BOOLEAN, "int": DataTypes.INT, "long": DataTypes.BIGINT,
              "float": DataTypes.FLOAT, "double": DataTypes.DOUBLE, "bytes": DataTypes.BYTES,
              "string": DataTypes.STRING, "null": DataTypes.NULL}


def _logical(t: dict[str, Any]) -> DataType | None:
    logical = t.get("logicalType")
    if logical == "date":
        return DataTypes.DATE()
    if logical == "time-millis":
        return DataTypes.TIME(3)
    if logical == "time-micros":
        return DataTypes.TIME(6)
    if logical in ("timestamp-millis", "timestamp-micros"):
        return DataTypes.TIMESTAMP_LTZ(3 if logical.endswith("millis") else 6)
    if logical in ("local-timestamp-millis", "local-timestamp-micros"):
        return DataTypes.TIMESTAMP(3 if logical.endswith("millis") else 6)
    if logical == "decimal":
        return DataTypes.DECIMAL(int(t["precision"]), int(t.get("scale", 0)))
    return None


def avro_data_type(t: Any) -> DataType:
    """The DataType of an Avro type (a union with null is a nullable type)."""
    if isinstance(t, list):
        others = [x for x in t if x != "null"]
        if len(others) != 1:
            raise TypeError(f"an Avro union of {t} has no data type (only [\"null\", T])")
        return avro_data_type(others[0]).nullable()
    if isinstance(t, str):
        if t in _PRIMITIVE:
            return _PRIMITIVE[t]().not_null()
        raise TypeError(f"the Avro type {t!r} is not supported here (named types: inline them)")
    kind = t["type"]
    logical = _logical(t)
    if logical is not None:
        return logical.not_null()
    if kind == "record":
        return DataTypes.ROW([DataTypes.FIELD(f["name"], avro_data_type(f["type"]))
                              for f in t["fields"]]).not_null()
    if kind == "array":
        return DataTypes.ARRAY(avro_data_type(t["items"])).not_null()
    if kind == "map":
        return DataTypes.MAP(DataTypes.STRING().not_null(), avro_data_type(t["values"])).not_null()
    if kind == "enum":
        return DataTypes.STRING().not_null()
    if kind == "fixed":
        return DataTypes.BYTES().not_null()
    return avro_data_type(kind)


def avro_row_type(schema: AvroSchema) -> RowType:
    """The ROW of an Avro record schema's fields."""
    t = avro_data_type(schema.json)
    if not isinstance(t, RowType):
        raise TypeError(f"an Avro record schema is needed here, not {schema}")
    return t.nullable()  # type: ignore[return-value]


def avro_records_of(table: Any, schema: AvroSchema) -> Iterator[dict[str, Any]]:
    """An Arrow table's rows as Avro generic records (dicts; maps as dicts)."""
    row_type = avro_row_type(schema)
    maps = [f.name for f in row_type.fields if isinstance(f.data_type, MapType)]
    records = table.to_pylist()
    for r in records:
        for name in maps:
            if r[name] is not None:
                r[name] = dict(r[name])
    return iter(records)


# -- reading and writing ----------------------------------------------------------------------------

class AvroInputFormat(BulkFormat):
    """Reads Avro container files into generic records (dicts) of ``schema`` (PyFlink's
    ``AvroInputFormat(path, schema)``: with ``env.create_input``, or as the format of
    ``FileSource.for_bulk_file_format``); files written with another schema are resolved to it
    by Avro's rules, or fail naming the file."""

    def __init__(self, path: str | None = None, schema: AvroSchema | None = None) -> None:
        if schema is None and isinstance(path, AvroSchema):
            path, schema = None, path
        if not isinstance(schema, AvroSchema):
            raise TypeError(f"AvroInputFormat takes an AvroSchema, not {schema!r}")
        self.path = path
        self.schema = schema

    def produced_type(self) -> RowTypeInfo:
        return avro_row_type(self.schema).to_type_info()

    def read_file(self, path: str) -> Iterator[Any]:
        return read_errors_named(path, self._records(path))

    def _records(self, path: str) -> Iterator[Any]:
        import fastavro

        with open_file(path) as raw:
            try:
                reader = fastavro.reader(raw, reader_schema=self.schema.parsed)
            except ValueError as exc:
                raise FileFormatError(f"{path} is not an Avro file: {exc}") from exc
            yield from reader

    def __repr__(self) -> str:
        return f"AvroInputFormat({self.path!r}, {self.schema})"


class _AvroBulkWriter(BulkWriter):
    def __init__(self, schema: AvroSchema, stream: BinaryIO) -> None:
        from fastavro.write import Writer

        self.names = schema.field_names()
        self.writer = Writer(stream, schema.parsed)
        self.stream = stream

    def add_element(self, element: Any) -> None:
        if not isinstance(element, dict):
            element = dict(zip(self.names, element))
        self.writer.write(element)

    def flush(self) -> None:
        self.writer.flush()

    def finish(self) -> None:
        self.writer.flush()
        self.stream.flush()


class _AvroWriterFactory(BulkWriterFactory):
    def __init__(self, schema: AvroSchema) -> None:
        self.schema = schema

    def create(self, stream: BinaryIO) -> BulkWriter:
        return _AvroBulkWriter(self.schema, stream)

    def __repr__(self) -> str:
        return f"AvroWriters.for_generic_record({self.schema})"


class AvroWriters:
    """Writer factories for Avro container files (PyFlink's ``AvroWriters``)."""

    @staticmethod
    def for_generic_record(schema: AvroSchema) -> BulkWriterFactory:
        """Writes generic records (dicts, or Rows in the schema's field order) of ``schema``."""
        if not isinstance(schema, AvroSchema):
            raise TypeError(f"AvroWriters.for_generic_record takes an AvroSchema, not {schema!r}")
        return _AvroWriterFactory(schema)
