"""The ``format`` of a ``filesystem`` table: how a file's bytes become rows and rows a file.

Shared with the DataStream formats (``sessioncluster.api.formats``): Flink writes CSV, Parquet
and Avro the same for tables and streams; the table ``json`` format differs from the DataStream
``JsonRowSerializationSchema`` only in its timestamps (``json.timestamp-format.standard``).
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any, BinaryIO, Callable, Iterator

from ....api.formats.avro import AvroInputFormat, AvroSchema, AvroWriters
from ....api.formats.base import (
    ArrowBulkWriter,
    FileFormatError,
    java_decimal,
    json_lines,
    local_path,
    open_decompressed,
)
from ....api.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema, number_text
from ....api.formats.json import jackson_text
from ....api.formats.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
    conformed,
    read_columns,
)
from ....api.table.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DataTypes,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    LocalZonedTimestampType,
    MapType,
    RowType,
    TimestampType,
    TimeType,
)
from ....common.serialization import BulkWriter, BulkWriterFactory
from ....common.types import Row
from ..model import FlinkSqlError
from .changelogjson import is_changelog_format, json_options, record_encoder, record_rows

#: the formats of the filesystem connector here, as Flink names them
#: every format of a filesystem table (the changelog JSON ones write only: :mod:`.changelogjson`)
FORMATS = ("avro", "canal-json", "csv", "debezium-json", "json", "maxwell-json", "ogg-json",
           "parquet", "raw")


def _flag(options: dict[str, str], key: str, default: bool = False) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise FlinkSqlError(f"Could not parse value '{value}' for key '{key}'.")
    return value.strip().lower() == "true"


def _unescaped(text: str) -> str:
    """A delimiter as the user wrote it: ``\\t`` is a tab (Flink's ``StringEscapeUtils``)."""
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in text else text


# -- csv ---------------------------------------------------------------------------------------------

def csv_schema(row_type: RowType, options: dict[str, str]) -> CsvSchema:
    """The CsvSchema of a table's file columns and its ``csv.*`` options."""
    builder = CsvSchema.builder()
    for f in row_type.fields:
        builder.add_column(f.name, f.data_type)
    delimiter = _unescaped(options.get("csv.field-delimiter", ","))
    if len(delimiter) != 1:
        raise FlinkSqlError("Option 'csv.field-delimiter' must be a string with single character, "
                            f"but was: {options['csv.field-delimiter']}")
    builder.set_column_separator(delimiter)
    if _flag(options, "csv.disable-quote-character"):
        if "csv.quote-character" in options:
            raise FlinkSqlError("Format cannot define a quote character and disabled quote "
                                "character at the same time.")
        builder.disable_quote_char()
    elif "csv.quote-character" in options:
        builder.set_quote_char(options["csv.quote-character"])
    if "csv.escape-character" in options:
        builder.set_escape_char(options["csv.escape-character"])
    if "csv.null-literal" in options:
        builder.set_null_value(options["csv.null-literal"])
    if "csv.array-element-delimiter" in options:
        builder.set_array_element_separator(options["csv.array-element-delimiter"])
    builder.set_allow_comments(_flag(options, "csv.allow-comments"))
    builder.set_ignore_parse_errors(_flag(options, "csv.ignore-parse-errors"))
    return builder.build()


def _text_value(text: str, t: DataType, separator: str) -> Any:
    """A CSV field's text as a value of ``t`` (an empty field of a non-string type is null)."""
    if isinstance(t, CharType):
        return text
    if text == "":
        return None
    if isinstance(t, ArrayType):
        return [_text_value(x, t.element_type, separator) for x in text.split(separator)]
    if isinstance(t, BinaryType):
        import base64
        return base64.b64decode(text, validate=True)
    return _json_value(text.strip(), t)


def _csv_rows_lenient(path: str, row_type: RowType, options: dict[str, str]) -> Iterator[Any]:
    """``csv.ignore-parse-errors`` as Flink's table format: a field that does not parse is null,
    a line that does not split into the columns is skipped."""
    text_type = DataTypes.ROW([DataTypes.FIELD(f.name, DataTypes.STRING()) for f in row_type.fields])
    lines = CsvReaderFormat.for_schema(csv_schema(text_type, options)).read_file(path)
    separator = options.get("csv.array-element-delimiter", ";")
    factory = Row(*row_type.field_names())
    for line in lines:
        values = []
        for text, f in zip(line, row_type.fields):
            try:
                values.append(None if text is None else _text_value(text, f.data_type, separator))
            except (ValueError, KeyError, TypeError, ArithmeticError):
                values.append(None)
        yield factory(*values)


# -- json --------------------------------------------------------------------------------------------

def _timestamp_text(value: datetime.datetime, iso: bool, zoned: bool) -> str:
    """Flink's JSON timestamp: ``2026-11-24 08:00:00.123`` (SQL) or ``2026-11-24T08:00:00.123``
    (ISO-8601), the fraction without trailing zeros; a TIMESTAMP_LTZ in UTC with a ``Z``."""
    if zoned and value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    text = value.strftime("%Y-%m-%dT%H:%M:%S" if iso else "%Y-%m-%d %H:%M:%S")
    fraction = f"{value.microsecond:06d}".rstrip("0")
    return (f"{text}.{fraction}" if fraction else text) + ("Z" if zoned else "")


class _JsonEncoder:
    """A row as a line of Flink's table ``json`` format."""

    def __init__(self, row_type: RowType, options: dict[str, str]) -> None:
        self.row_type = row_type
        standard = options.get("json.timestamp-format.standard", "SQL").upper()
        self.iso = standard.startswith("ISO-8601")
        self.plain_decimals = _flag(options, "json.encode.decimal-as-plain-number")
        self.ignore_nulls = _flag(options, "json.encode.ignore-null-fields")
        self.names = [jackson_text(n) for n in row_type.field_names()]

    def value(self, value: Any, t: DataType) -> Any:
        """``value`` as the Python value ``jackson_text`` writes (a decimal as its own text)."""
        if value is None:
            return None
        if isinstance(t, RowType):
            values = value.values() if isinstance(value, dict) else value
            return {f.name: self.value(v, f.data_type) for f, v in zip(t.fields, values)}
        if isinstance(t, ArrayType):
            return [self.value(v, t.element_type) for v in value]
        if isinstance(t, MapType):
            return {str(k): self.value(v, t.value_type) for k, v in dict(value).items()}
        if isinstance(t, (TimestampType, LocalZonedTimestampType)):
            return _timestamp_text(value, self.iso, isinstance(t, LocalZonedTimestampType))
        if isinstance(t, BinaryType):
            import base64
            return base64.b64encode(value).decode("ascii")
        if isinstance(t, DecimalType):
            text = format(Decimal(value).normalize(), "f") if value else "0"
            return _Raw(text if self.plain_decimals else java_decimal(text))
        if isinstance(t, (DateType, TimeType)):
            return value.isoformat()
        return value

    def line(self, row: Any) -> str:
        parts = []
        for name, f, v in zip(self.names, self.row_type.fields, row):
            if v is None and self.ignore_nulls:
                continue
            encoded = self.value(v, f.data_type)
            parts.append(f"{name}:{encoded.text if isinstance(encoded, _Raw) else jackson_text(encoded)}")
        return "{" + ",".join(parts) + "}"


_SHORT_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"),
                  ("\t", "\\t"), ("\b", "\\b"), ("\f", "\\f"))


def _json_strings(column: Any) -> Any:
    """A string column as JSON string literals, escaped as Jackson escapes them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = column.cast(pa.string())
    for char, escaped in _SHORT_ESCAPES:
        text = pc.replace_substring(text, char, escaped)
    text = pc.binary_join_element_wise('"', text, '"', "")
    others = pc.fill_null(pc.match_substring_regex(column.cast(pa.string()),
                                                   r"[\x00-\x07\x0b\x0e-\x1f]"), False)
    if pc.any(others).as_py():  # the rare other control characters: \u00XX, in Python
        values, flags = column.to_pylist(), others.to_pylist()
        text = pa.array([jackson_text(v) if f else x
                         for v, f, x in zip(values, flags, text.to_pylist())], pa.string())
    return text


def _json_timestamps(column: Any, t: DataType, iso: bool) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    zoned = isinstance(t, LocalZonedTimestampType)
    if zoned:
        column = column.cast(pa.timestamp(column.type.unit, "UTC"))
    text = pc.strftime(column, "%Y-%m-%dT%H:%M:%S" if iso else "%Y-%m-%d %H:%M:%S")
    text = pc.replace_substring_regex(text, r"(\.\d*?)0+$", r"\1")
    text = pc.replace_substring_regex(text, r"\.$", "")
    return pc.binary_join_element_wise('"', text, 'Z"' if zoned else '"', "")


def json_batch_text(encoder: "_JsonEncoder", batch: Any) -> bytes:
    """A batch of atomic columns as lines of the ``json`` format, built a column at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not batch.num_rows:
        return b""
    parts: list[Any] = ["{"]
    for i, (name, f) in enumerate(zip(encoder.names, encoder.row_type.fields)):
        column, t = batch.column(i), f.data_type
        if isinstance(t, CharType):
            text = _json_strings(column)
        elif isinstance(t, (TimestampType, LocalZonedTimestampType)):
            text = _json_timestamps(column, t, encoder.iso)
        elif isinstance(t, DateType):
            text = pc.binary_join_element_wise('"', column.cast(pa.string()), '"', "")
        else:
            text = number_text(column, t)
        parts += ["," if i else "", f"{name}:", pc.fill_null(text, "null")]
    lines = pc.binary_join_element_wise(*parts, "}\n", "")
    _, offsets, values = lines.buffers()
    bounds = np.frombuffer(offsets, dtype=np.int32)[[lines.offset, lines.offset + len(lines)]]
    return values.to_pybytes()[bounds[0]:bounds[1]]


class _JsonBatchWriterFactory(BulkWriterFactory):
    def __init__(self, encoder: "_JsonEncoder") -> None:
        self.encoder = encoder

    def create(self, stream: BinaryIO) -> BulkWriter:
        def write(batch: Any) -> None:
            stream.write(json_batch_text(self.encoder, batch))

        return ArrowBulkWriter(self.encoder.row_type, write)


def json_row_encoder(row_type: RowType, options: dict[str, str]) -> Callable[[Any], str]:
    """A row as its line of the ``json`` format (without the line break), a row at a time."""
    return _JsonEncoder(row_type, options).line


class _Raw:
    """Text written into the JSON as it is (a decimal's digits)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _json_value(value: Any, t: DataType) -> Any:
    """A parsed JSON value as a value of ``t`` (numbers were parsed as Decimals)."""
    if value is None:
        return None
    if isinstance(t, RowType):
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object for {t}, got {value!r}")
        return Row(*t.field_names())(*(_json_value(value.get(f.name), f.data_type) for f in t.fields))
    if isinstance(t, ArrayType):
        return [_json_value(v, t.element_type) for v in value]
    if isinstance(t, MapType):
        return {k: _json_value(v, t.value_type) for k, v in value.items()}
    if isinstance(t, (FloatType, DoubleType)):
        return float(value)
    if isinstance(t, DecimalType):
        return Decimal(str(value))
    if isinstance(t, IntegralType):
        if isinstance(value, Decimal) and value != value.to_integral_value():
            raise ValueError(f"not an integer: {value}")
        return int(value)
    if isinstance(t, BooleanType):
        if isinstance(value, bool):
            return value
        return {"true": True, "false": False}[str(value).lower()]
    if isinstance(t, CharType):
        return value if isinstance(value, str) else jackson_text(value)
    if isinstance(t, BinaryType):
        import base64
        return base64.b64decode(value)
    if isinstance(t, DateType):
        return datetime.date.fromisoformat(value)
    if isinstance(t, TimeType):
        return datetime.time.fromisoformat(value.removesuffix("Z"))
    if isinstance(t, TimestampType):
        return datetime.datetime.fromisoformat(value.removesuffix("Z").replace(" ", "T"))
    if isinstance(t, LocalZonedTimestampType):
        return datetime.datetime.fromisoformat(value.replace(" ", "T").replace("Z", "+00:00"))
    return value


def json_row_decoder(row_type: RowType) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A parsed JSON object (numbers as Decimals) as the values of ``row_type``'s fields, a
    missing field null."""
    fields = [(f.name, f.data_type) for f in row_type.fields]
    return lambda obj: tuple(_json_value(obj.get(name), t) for name, t in fields)


def _json_rows(path: str, row_type: RowType, options: dict[str, str]) -> Iterator[Any]:
    ignore = _flag(options, "json.ignore-parse-errors")
    fail_on_missing = _flag(options, "json.fail-on-missing-field")
    factory = Row(*row_type.field_names())
    for number, line, parsed in json_lines(path):
        try:
            if isinstance(parsed, ValueError):
                raise parsed
            objects = parsed if isinstance(parsed, list) else [parsed]
            rows = []
            for obj in objects:
                if not isinstance(obj, dict):
                    raise ValueError(f"not a JSON object: {line.strip()!r}")
                values = []
                for f in row_type.fields:
                    if fail_on_missing and f.name not in obj:
                        raise ValueError(f"Could not find field with name '{f.name}'.")
                    try:
                        values.append(_json_value(obj.get(f.name), f.data_type))
                    except (ValueError, KeyError, TypeError, ArithmeticError):
                        if not ignore:
                            raise
                        values.append(None)  # Flink: a field that does not parse is null
                rows.append(factory(*values))
        except (ValueError, KeyError, TypeError, ArithmeticError) as exc:
            if ignore:
                continue
            raise FileFormatError(f"{local_path(path)}, line {number}: Failed to deserialize "
                                  f"JSON '{line.rstrip()}': {exc}") from None
        yield from rows


# -- avro --------------------------------------------------------------------------------------------

def _avro_type(t: DataType, name: str) -> Any:
    """Flink's ``AvroSchemaConverter.convertToSchema``: a nullable type is a union with null."""
    if isinstance(t, BooleanType):
        avro: Any = "boolean"
    elif isinstance(t, CharType):
        avro = "string"
    elif isinstance(t, BinaryType):
        avro = "bytes"
    elif isinstance(t, IntegralType):
        avro = "long" if t.sql_name == "BIGINT" else "int"
    elif isinstance(t, FloatType):
        avro = "float"
    elif isinstance(t, DoubleType):
        avro = "double"
    elif isinstance(t, DecimalType):
        avro = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif isinstance(t, DateType):
        avro = {"type": "int", "logicalType": "date"}
    elif isinstance(t, TimeType):
        avro = {"type": "int", "logicalType": "time-millis"}
    elif isinstance(t, (TimestampType, LocalZonedTimestampType)):
        # Flink's legacy mapping (its default, 'avro.timestamp_mapping.legacy'): a TIMESTAMP is a
        # timestamp-millis, a TIMESTAMP_LTZ a local-timestamp-millis
        unit = "millis" if (t.precision or 0) <= 3 else "micros"
        local = "local-" if isinstance(t, LocalZonedTimestampType) else ""
        avro = {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    elif isinstance(t, ArrayType):
        avro = {"type": "array", "items": _avro_type(t.element_type, name)}
    elif isinstance(t, MapType):
        avro = {"type": "map", "values": _avro_type(t.value_type, name)}
    elif isinstance(t, RowType):
        avro = {"type": "record", "name": name, "fields": [
            {"name": f.name, "type": _avro_type(f.data_type, f"{name}_{f.name}")}
            | ({"default": None} if f.data_type.is_nullable else {}) for f in t.fields]}
    else:
        raise FlinkSqlError(f"The avro format cannot write the type {t}")
    return ["null", avro] if t.is_nullable else avro


def avro_schema(row_type: RowType) -> AvroSchema:
    """The Avro record schema Flink derives from a table's file columns."""
    return AvroSchema(_avro_type(row_type.not_null(), "org.apache.flink.avro.generated.record"))


# -- raw ---------------------------------------------------------------------------------------------

def _raw_rows(path: str, row_type: RowType, options: dict[str, str]) -> Iterator[Any]:
    charset = options.get("raw.charset", "UTF-8")
    binary = isinstance(row_type.fields[0].data_type, BinaryType)
    factory = Row(row_type.field_names()[0])
    with open_decompressed(path) as raw:
        for line in raw:
            value = line.rstrip(b"\n")
            yield factory(value if binary else value.decode(charset))


class _LineWriter(BulkWriter):
    """Rows as lines of text (``json``, ``raw``): Flink's row-format encoders, '\\n' after each."""

    def __init__(self, stream: BinaryIO, encode: Callable[[Any], bytes]) -> None:
        self.stream = stream
        self.encode = encode
        self.buffer: list[bytes] = []

    def add_element(self, element: Any) -> None:
        self.buffer.append(self.encode(element))
        if len(self.buffer) >= 256:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.stream.write(b"\n".join(self.buffer) + b"\n")
            self.buffer = []

    def finish(self) -> None:
        self.flush()


class _LineWriterFactory(BulkWriterFactory):
    def __init__(self, encode: Callable[[Any], bytes]) -> None:
        self.encode = encode

    def create(self, stream: BinaryIO) -> BulkWriter:
        return _LineWriter(stream, self.encode)


def _raw_encoder(row_type: RowType, options: dict[str, str]) -> Callable[[Any], bytes]:
    charset = options.get("raw.charset", "UTF-8")
    if isinstance(row_type.fields[0].data_type, BinaryType):
        return lambda row: bytes(row[0] or b"")
    return lambda row: ("" if row[0] is None else str(row[0])).encode(charset)


# -- the format of a table -----------------------------------------------------------------------------

def check_raw(row_type: RowType) -> None:
    """Flink's raw format takes exactly one column."""
    if len(row_type.fields) != 1:
        raise FlinkSqlError("The 'raw' format only supports single physical column. However the "
                            f"table has {len(row_type.fields)} physical columns: "
                            f"{row_type.field_names()}")


def file_reader(fmt: str, row_type: RowType, options: dict[str, str]
                ) -> Callable[[str], Iterator[Any]]:
    """How the rows (of ``row_type``'s fields) of one file of format ``fmt`` are read."""
    if fmt == "csv":
        if _flag(options, "csv.ignore-parse-errors"):
            return lambda path: _csv_rows_lenient(path, row_type, options)
        return CsvReaderFormat.for_schema(csv_schema(row_type, options)).read_file
    if fmt == "json":
        return lambda path: _json_rows(path, row_type, options)
    if fmt == "parquet":
        return ParquetColumnarRowInputFormat(row_type).read_file
    if fmt == "avro":
        names = row_type.field_names()
        return lambda path: ([r.get(n) for n in names] for r in _avro_records(path, row_type))
    if fmt == "raw":
        check_raw(row_type)
        return lambda path: _raw_rows(path, row_type, options)
    if is_changelog_format(fmt):  # the row type's last two fields: the RowKind, the position
        row = json_row_decoder(file_row_type([(f.name, f.data_type) for f in row_type.fields[:-2]]))
        return record_rows(fmt, row, _flag(options, f"{fmt}.ignore-parse-errors"))
    raise FlinkSqlError(f"Unknown format {fmt}")


def plain_row_type(row_type: RowType) -> bool:
    """True when every column is atomic and has the same Arrow type in Spark and here."""
    return not any(isinstance(f.data_type, (ArrayType, MapType, RowType, BinaryType, TimeType))
                   for f in row_type.fields)


def _json_arrow(path: str, row_type: RowType) -> Any:
    """A JSON lines file read by pyarrow in one go (temporal fields as text, then cast); None
    when it needs the line-by-line path (which names a bad line, or skips it)."""
    import pyarrow as pa
    import pyarrow.json as pajson

    temporal = (DateType, TimestampType, LocalZonedTimestampType)
    read_types = [pa.string() if isinstance(f.data_type, temporal) else f.data_type.to_arrow()
                  for f in row_type.fields]
    schema = pa.schema([pa.field(n, t) for n, t in zip(row_type.field_names(), read_types)])
    try:
        with open_decompressed(path) as raw:
            table = pajson.read_json(raw, parse_options=pajson.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"))
        columns = [table.column(f.name).cast(f.data_type.to_arrow()) for f in row_type.fields]
    except (pa.ArrowException, ValueError, KeyError):
        return None
    return pa.Table.from_arrays(columns, schema=row_type.arrow_schema())


def _parquet_arrow(path: str, row_type: RowType) -> Any:
    import pyarrow.parquet as pq

    from ....api.formats.base import open_file

    with open_file(path) as raw:
        pf = pq.ParquetFile(raw)
        columns, _ = read_columns(path, pf.schema_arrow, row_type)
        return conformed(pf.read(columns=columns, use_threads=False), columns, row_type)


def _avro_records(path: str, row_type: RowType) -> Iterator[dict[str, Any]]:
    """An Avro file's records resolved to the table's schema by field name (as Avro's Java
    reader Flink uses does, whatever the writer named its record)."""
    import fastavro

    from ....api.formats.base import open_file

    with open_file(path) as raw:
        try:
            written = fastavro.reader(raw).writer_schema
        except ValueError as exc:
            raise FileFormatError(f"{local_path(path)} is not an Avro file: {exc}") from exc
    name = written.get("name") if isinstance(written, dict) else None
    schema = _avro_type(row_type.not_null(), name or "org.apache.flink.avro.generated.record")
    return AvroInputFormat(None, AvroSchema(schema)).read_file(path)


def _avro_arrow(path: str, row_type: RowType) -> Any:
    """An Avro file's records (resolved to the table's schema) as an Arrow table."""
    import pyarrow as pa

    return pa.Table.from_pylist(list(_avro_records(path, row_type)), schema=row_type.arrow_schema())


def arrow_reader(fmt: str, row_type: RowType, options: dict[str, str]
                 ) -> Callable[[str], Any] | None:
    """A faster way to read a whole file of format ``fmt`` as an Arrow table of ``row_type``'s
    columns, where there is one; it gives None for a file only ``file_reader`` reads."""
    if fmt == "csv":
        return CsvReaderFormat.for_schema(csv_schema(row_type, options)).read_arrow
    if fmt == "json" and plain_row_type(row_type) and not _flag(options, "json.fail-on-missing-field"):
        return lambda path: _json_arrow(path, row_type)
    if fmt == "parquet":
        return lambda path: _parquet_arrow(path, row_type)
    if fmt == "avro" and plain_row_type(row_type):
        return lambda path: _avro_arrow(path, row_type)
    return None


def takes_batches(fmt: str, row_type: RowType, options: dict[str, str]) -> bool:
    """True when ``writer_factory`` gives ArrowBulkWriters that write Arrow batches of atomic
    columns as they are (``add_batch``)."""
    if not plain_row_type(row_type):
        return False
    if fmt == "json":
        return not (_flag(options, "json.encode.decimal-as-plain-number")
                    or _flag(options, "json.encode.ignore-null-fields"))
    return fmt in ("csv", "parquet")


def writer_factory(fmt: str, row_type: RowType, options: dict[str, str]) -> BulkWriterFactory:
    """The writer of a part file of format ``fmt`` for rows of ``row_type``."""
    if fmt == "csv":
        return CsvBulkWriters.for_schema(csv_schema(row_type, options))
    if fmt == "json":
        encoder = _JsonEncoder(row_type, options)
        if takes_batches(fmt, row_type, options):
            return _JsonBatchWriterFactory(encoder)
        return _LineWriterFactory(lambda row: encoder.line(row).encode("utf-8"))
    if fmt == "parquet":
        return ParquetBulkWriters.for_row_type(row_type)
    if fmt == "avro":
        return AvroWriters.for_generic_record(avro_schema(row_type))
    if fmt == "raw":
        check_raw(row_type)
        return _LineWriterFactory(_raw_encoder(row_type, options))
    if is_changelog_format(fmt):  # each row with its RowKind last
        encoder = _JsonEncoder(row_type, json_options(fmt, options))
        return _LineWriterFactory(record_encoder(fmt, encoder.line))
    raise FlinkSqlError(f"Unknown format {fmt}")


def file_row_type(fields: list[tuple[str, DataType]]) -> RowType:
    """The ROW of a file's columns."""
    return DataTypes.ROW([DataTypes.FIELD(n, t) for n, t in fields])
