"""CSV (``pyflink.datastream.formats.csv``): ``CsvSchema``, ``CsvReaderFormat``, ``CsvBulkWriters``.

Files are read by pyarrow's CSV reader, a column at a time; a file it rejects is read again line
by line, so that the error names the line (or, with ``set_ignore_parse_errors``, the bad lines
are skipped and the others read).
"""

from __future__ import annotations

import base64
import csv
import datetime
import io
import itertools
import re
from decimal import Decimal, InvalidOperation
from typing import Any, BinaryIO, Callable, Iterator

from ...common.serialization import BulkWriter, BulkWriterFactory
from ...common.typeinfo import RowTypeInfo
from ...common.types import Row
from ..table.types import (
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
    FractionalType,
    IntegralType,
    LocalZonedTimestampType,
    RowField,
    RowType,
    TimestampType,
    TimeType,
)
from .base import (
    WRITE_BATCH_ROWS,
    ArrowBulkWriter,
    FileFormatError,
    StreamFormat,
    java_decimal,
    java_double,
    local_path,
    open_decompressed,
    read_errors_named,
    to_arrow_batch,
)


class CsvSchema:
    """The columns of a CSV file and how it is written (PyFlink's ``CsvSchema``, Jackson's)."""

    def __init__(self, columns: list[tuple[RowField, str | None]], options: dict[str, Any]) -> None:
        self._columns = columns
        self._row_type = DataTypes.ROW([f for f, _ in columns])
        self.options = options

    @staticmethod
    def builder() -> "CsvSchemaBuilder":
        return CsvSchemaBuilder()

    @property
    def row_type(self) -> RowType:
        return self._row_type

    def array_separator(self, index: int) -> str | None:
        """The element separator of column ``index`` if it is an array column."""
        return self._columns[index][1]

    def get_type_info(self) -> RowTypeInfo:
        """The records' type: ``Types.ROW_NAMED`` of the columns."""
        return self._row_type.to_type_info()

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()

    def __str__(self) -> str:
        cols = ", ".join(f"{f.name} {f.data_type}" for f, _ in self._columns)
        return f"CsvSchema([{cols}], separator={self.options['column_separator']!r})"

    __repr__ = __str__


class CsvSchemaBuilder:
    """Builds a CsvSchema (PyFlink's ``CsvSchemaBuilder``)."""

    def __init__(self) -> None:
        self._columns: list[tuple[RowField, str | None]] = []
        self._options: dict[str, Any] = {
            "column_separator": ",", "quote_char": '"', "escape_char": None, "use_header": False,
            "skip_first_data_row": False, "allow_comments": False, "null_value": None,
            "line_separator": "\n", "array_element_separator": ";", "strict_headers": False,
            "ignore_parse_errors": False}

    def build(self) -> CsvSchema:
        return CsvSchema(list(self._columns), dict(self._options))

    def _add(self, name: str, data_type: DataType, separator: str | None = None) -> "CsvSchemaBuilder":
        self._columns.append((DataTypes.FIELD(name, data_type), separator))
        return self

    def add_array_column(self, name: str, separator: str = ";",
                         element_type: DataType | None = None) -> "CsvSchemaBuilder":
        """An array column: its elements separated by ``separator`` within the field."""
        return self._add(name, DataTypes.ARRAY(element_type or DataTypes.STRING()), separator)

    def add_boolean_column(self, name: str) -> "CsvSchemaBuilder":
        return self._add(name, DataTypes.BOOLEAN())

    def add_number_column(self, name: str, number_type: DataType | None = None) -> "CsvSchemaBuilder":
        """A number column, ``DataTypes.BIGINT()`` unless ``number_type`` says otherwise."""
        number_type = number_type or DataTypes.BIGINT()
        if not isinstance(number_type, (IntegralType, FractionalType)):
            raise TypeError(f"add_number_column takes a numeric DataType, not {number_type!r}")
        return self._add(name, number_type)

    def add_string_column(self, name: str) -> "CsvSchemaBuilder":
        return self._add(name, DataTypes.STRING())

    def add_column(self, name: str, data_type: DataType) -> "CsvSchemaBuilder":
        """A column of any atomic type (DATE, TIMESTAMP, DECIMAL, ...)."""
        return self._add(name, data_type)

    def add_columns_from(self, schema: CsvSchema) -> "CsvSchemaBuilder":
        self._columns.extend(schema._columns)  # noqa: SLF001 - the same class's columns
        return self

    def clear_columns(self) -> "CsvSchemaBuilder":
        self._columns.clear()
        return self

    def _set(self, key: str, value: Any) -> "CsvSchemaBuilder":
        self._options[key] = value
        return self

    def set_allow_comments(self, allow: bool = True) -> "CsvSchemaBuilder":
        """Lines starting with ``#`` are comments, skipped."""
        return self._set("allow_comments", allow)

    def set_any_property_name(self, name: str) -> "CsvSchemaBuilder":
        return self

    def disable_array_element_separator(self) -> "CsvSchemaBuilder":
        return self._set("array_element_separator", "")

    def remove_array_element_separator(self, index: int) -> "CsvSchemaBuilder":
        field, _ = self._columns[index]
        self._columns[index] = (field, None)
        return self

    def set_array_element_separator(self, separator: str) -> "CsvSchemaBuilder":
        return self._set("array_element_separator", separator)

    def set_column_separator(self, char: str) -> "CsvSchemaBuilder":
        return self._set("column_separator", _one_char(char, "Column separator"))

    def disable_escape_char(self) -> "CsvSchemaBuilder":
        return self._set("escape_char", None)

    def set_escape_char(self, char: str) -> "CsvSchemaBuilder":
        return self._set("escape_char", _one_char(char, "Escape char"))

    def set_line_separator(self, separator: str) -> "CsvSchemaBuilder":
        """The line separator written (reading takes ``\\n``, ``\\r`` and ``\\r\\n``)."""
        return self._set("line_separator", separator)

    def set_null_value(self, null_value: str) -> "CsvSchemaBuilder":
        """The text of a null field (default: an empty field is null, except in a string column)."""
        return self._set("null_value", null_value)

    def disable_quote_char(self) -> "CsvSchemaBuilder":
        return self._set("quote_char", None)

    def set_quote_char(self, char: str) -> "CsvSchemaBuilder":
        return self._set("quote_char", _one_char(char, "Quote char"))

    def set_skip_first_data_row(self, skip: bool = True) -> "CsvSchemaBuilder":
        return self._set("skip_first_data_row", skip)

    def set_strict_headers(self, strict: bool = True) -> "CsvSchemaBuilder":
        """With a header: its column names must be the schema's."""
        return self._set("strict_headers", strict)

    def set_use_header(self, use: bool = True) -> "CsvSchemaBuilder":
        """The first line of a file is a header (read: skipped; written: the column names)."""
        return self._set("use_header", use)

    def set_ignore_parse_errors(self, ignore: bool = True) -> "CsvSchemaBuilder":
        """Skip the lines that do not parse (else a bad line fails the job, naming file and line)."""
        return self._set("ignore_parse_errors", ignore)

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()


def _one_char(char: str, what: str) -> str:
    if not isinstance(char, str) or len(char) != 1:
        raise ValueError(f"{what} must be a single char, got {char!r}")
    return char


# -- reading ----------------------------------------------------------------------------------------

def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _parser(t: DataType) -> Callable[[str], Any]:
    """How a field's text becomes a value of ``t`` (the line-by-line path)."""
    if isinstance(t, BooleanType):
        return _parse_bool
    if isinstance(t, IntegralType):
        return lambda s: int(s.strip())
    if isinstance(t, FractionalType):
        if t.sql_name == "DECIMAL":
            def dec(s: str) -> Decimal:
                try:
                    return Decimal(s.strip())
                except InvalidOperation:
                    raise ValueError(f"not a decimal: {s!r}") from None
            return dec
        return lambda s: float(s.strip())
    if isinstance(t, DateType):
        return lambda s: datetime.date.fromisoformat(s.strip())
    if isinstance(t, TimeType):
        return lambda s: datetime.time.fromisoformat(s.strip())
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        return lambda s: datetime.datetime.fromisoformat(s.strip())
    if isinstance(t, BinaryType):
        return lambda s: base64.b64decode(s, validate=True)
    return lambda s: s


class CsvReaderFormat(StreamFormat):
    """Reads CSV files into Rows of the schema's columns (PyFlink's ``CsvReaderFormat``)."""

    def __init__(self, schema: CsvSchema, ignore_parse_errors: bool = False) -> None:
        super().__init__("csv")
        self.schema = schema
        self.ignore_parse_errors = ignore_parse_errors or bool(schema.options["ignore_parse_errors"])

    @staticmethod
    def for_schema(schema: CsvSchema) -> "CsvReaderFormat":
        if not isinstance(schema, CsvSchema):
            raise TypeError(f"CsvReaderFormat.for_schema takes a CsvSchema, not {schema!r}")
        return CsvReaderFormat(schema)

    def with_ignore_parse_errors(self) -> "CsvReaderFormat":
        """Skip the lines that do not parse (Flink's ``withIgnoreParseErrors``)."""
        return CsvReaderFormat(self.schema, True)

    def produced_type(self) -> RowTypeInfo:
        return self.schema.get_type_info()

    def read_file(self, path: str) -> Iterator[Any]:
        return read_errors_named(path, self._records(path))

    def _records(self, path: str) -> Iterator[Any]:
        opts = self.schema.options
        if not opts["allow_comments"]:
            try:
                with open_decompressed(path) as raw:
                    table = self._arrow_table(raw)
            except Exception as exc:  # noqa: BLE001 - pyarrow's parse and conversion errors
                if not type(exc).__module__.startswith("pyarrow") and not isinstance(exc, ValueError):
                    raise
            else:
                yield from self._rows_of_table(table)
                return
        # a file pyarrow rejects (or with comments): line by line, naming a bad line
        yield from self._rows_by_line(path)

    def read_arrow(self, path: str) -> Any:
        """The file as an Arrow table of the schema's columns, read by pyarrow in one go; None
        when only the line-by-line path reads it (comments, array/time/binary columns, a line
        pyarrow rejects: that path names the line, or skips it)."""
        if self.schema.options["allow_comments"] or any(
                isinstance(f.data_type, (ArrayType, TimeType, BinaryType))
                for f in self.schema.row_type.fields):
            return None
        try:
            with open_decompressed(path) as raw:
                return self._arrow_table(raw)
        except Exception as exc:  # noqa: BLE001 - pyarrow's parse and conversion errors
            if not type(exc).__module__.startswith("pyarrow") and not isinstance(exc, ValueError):
                raise
            return None

    def arrow_row_type(self) -> RowType | None:
        """The row type of the Arrow tables ``read_batches`` gives; None when only Rows are
        read (comments, array, time or binary columns: the line-by-line path parses them)."""
        if self.schema.options["allow_comments"] or any(
                isinstance(f.data_type, (ArrayType, TimeType, BinaryType))
                for f in self.schema.row_type.fields):
            return None
        return self.schema.row_type

    def read_batches(self, path: str) -> Iterator[Any]:
        """The file's records as Arrow tables of the schema's columns: parsed by pyarrow in one
        go; a file it rejects is read line by line (naming a bad line, or skipping it), as
        ``read_file`` reads it, and its Rows handed on in tables."""
        table = self.read_arrow(path)
        if table is not None:
            yield table
            return
        rows = read_errors_named(path, self._rows_by_line(path))
        while True:
            chunk = list(itertools.islice(rows, WRITE_BATCH_ROWS))
            if not chunk:
                return
            yield to_arrow_batch(chunk, self.schema.row_type)

    def _arrow_table(self, raw: BinaryIO) -> Any:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        opts, row_type = self.schema.options, self.schema.row_type
        names = row_type.field_names()
        skip = int(bool(opts["use_header"])) + int(bool(opts["skip_first_data_row"]))
        types = {f.name: (pa.string() if isinstance(f.data_type, (ArrayType, TimeType, BinaryType))
                          else f.data_type.to_arrow()) for f in row_type.fields}
        null_value = opts["null_value"]
        quote = opts["quote_char"]
        return pacsv.read_csv(
            raw,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=skip),
            # a quoted value may hold line breaks (Flink's csv format writes them so): without
            # newlines_in_values a line break would end the record in the middle of a value
            parse_options=pacsv.ParseOptions(delimiter=opts["column_separator"],
                                              quote_char=quote if quote else False,
                                              escape_char=opts["escape_char"] or False,
                                              newlines_in_values=bool(quote)),
            convert_options=pacsv.ConvertOptions(
                column_types=types, null_values=[null_value if null_value is not None else ""],
                strings_can_be_null=null_value is not None,
                true_values=["true", "TRUE", "True", "1"], false_values=["false", "FALSE", "False", "0"]))

    def _rows_of_table(self, table: Any) -> Iterator[Row]:
        row_type = self.schema.row_type
        columns = []
        for i, f in enumerate(row_type.fields):
            values = table.column(i).to_pylist()
            if isinstance(f.data_type, (ArrayType, TimeType, BinaryType)):
                convert = self._field_parser(i)
                # an empty TIME field is null (as a null is written), as on the line-by-line path
                empty_is_null = isinstance(f.data_type, TimeType)
                values = [None if v is None or (empty_is_null and v == "") else convert(v)
                          for v in values]
            columns.append(values)
        factory = Row(*row_type.field_names())
        return (factory(*vs) for vs in zip(*columns))

    def _field_parser(self, index: int) -> Callable[[str], Any]:
        t = self.schema.row_type.fields[index].data_type
        if isinstance(t, ArrayType):
            sep = self.schema.array_separator(index) or self.schema.options["array_element_separator"]
            element = _parser(t.element_type)
            if not sep:
                return lambda s: [element(s)]
            return lambda s: [element(x) for x in s.split(sep)] if s else []
        return _parser(t)

    def _rows_by_line(self, path: str) -> Iterator[Row]:
        opts, row_type = self.schema.options, self.schema.row_type
        names = row_type.field_names()
        parsers = [self._field_parser(i) for i in range(len(names))]
        strings = [isinstance(f.data_type, CharType) for f in row_type.fields]
        null_value = opts["null_value"]
        factory = Row(*names)
        quote = opts["quote_char"]
        with open_decompressed(path) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            reader = csv.reader(text, delimiter=opts["column_separator"], quotechar=quote or '"',
                                quoting=csv.QUOTE_MINIMAL if quote else csv.QUOTE_NONE,
                                escapechar=opts["escape_char"], strict=True)
            skip = int(bool(opts["use_header"])) + int(bool(opts["skip_first_data_row"]))
            while True:
                try:
                    fields = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    if self.ignore_parse_errors:
                        continue
                    raise FileFormatError(f"{local_path(path)}, line {reader.line_num}: {exc}") from exc
                if not fields or (opts["allow_comments"] and fields[0].lstrip().startswith("#")):
                    continue
                if skip:
                    skip -= 1
                    self._check_header(path, fields, skip)
                    continue
                try:
                    if len(fields) != len(names):
                        raise ValueError(f"{len(fields)} fields, the schema has {len(names)} columns")
                    values = [None if (f == null_value if null_value is not None
                                       else (f == "" and not s)) else p(f)
                              for f, p, s in zip(fields, parsers, strings)]
                except ValueError as exc:
                    if self.ignore_parse_errors:
                        continue
                    raise FileFormatError(f"{local_path(path)}, line {reader.line_num}: cannot parse "
                                          f"{opts['column_separator'].join(fields)!r}: {exc}") from None
                yield factory(*values)

    def _check_header(self, path: str, fields: list[str], still_to_skip: int) -> None:
        opts = self.schema.options
        if opts["use_header"] and opts["strict_headers"] and not (opts["skip_first_data_row"]
                                                                  and still_to_skip == 0):
            expected = self.schema.row_type.field_names()
            if [f.strip() for f in fields] != expected:
                raise FileFormatError(f"{local_path(path)}: the header {fields} is not the schema's "
                                      f"columns {expected}")

    def __repr__(self) -> str:
        return f"CsvReaderFormat.for_schema({self.schema})"


# -- writing ----------------------------------------------------------------------------------------

class _CsvWriterFactory(BulkWriterFactory):
    def __init__(self, schema: CsvSchema) -> None:
        self.schema = schema

    def arrow_row_type(self) -> RowType | None:
        """Its writers take Arrow batches of the schema's columns as they are (None with an
        array column: its elements are joined from Rows)."""
        row_type = self.schema.row_type
        return None if any(isinstance(f.data_type, ArrayType) for f in row_type.fields) else row_type

    def create(self, stream: BinaryIO) -> BulkWriter:
        return _CsvBulkWriter(self.schema, stream)

    def __repr__(self) -> str:
        return f"CsvBulkWriters.for_schema({self.schema})"


class _CsvBulkWriter(ArrowBulkWriter):
    """Writes batches of rows as CSV text (pyarrow's writer), arrays joined by their separator."""

    def __init__(self, schema: CsvSchema, stream: BinaryIO) -> None:
        self.schema = schema
        self.stream = stream
        self._header_due = bool(schema.options["use_header"])
        # arrays are written as the text of their joined elements
        self._text_type = DataTypes.ROW([
            DataTypes.FIELD(f.name, DataTypes.STRING()) if isinstance(f.data_type, ArrayType)
            else f for f in schema.row_type.fields])
        super().__init__(self._text_type, self._write_batch)

    def add_element(self, element: Any) -> None:
        if any(isinstance(f.data_type, ArrayType) for f in self.schema.row_type.fields):
            values = list(element.values()) if isinstance(element, dict) else list(element)
            for i, f in enumerate(self.schema.row_type.fields):
                if isinstance(f.data_type, ArrayType) and values[i] is not None:
                    sep = (self.schema.array_separator(i)
                           or self.schema.options["array_element_separator"])
                    values[i] = sep.join(_text(v) for v in values[i])
            element = values
        super().add_element(element)

    def _write_batch(self, batch: Any) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        opts = self.schema.options
        texts = [_column_text(column, f.data_type, opts)
                 for column, f in zip(batch.columns, self._text_type.fields)]
        nl = opts["line_separator"]
        data = b""
        if self._header_due:
            names = [_jackson_quoted(pa.array([f.name]), opts)[0].as_py()
                     for f in self._text_type.fields]
            data = (opts["column_separator"].join(names) + nl).encode("utf-8")
            self._header_due = False
        if batch.num_rows:
            lines = pc.binary_join_element_wise(
                *texts, opts["column_separator"], null_handling="replace",
                null_replacement=opts["null_value"] or "")
            lines = pc.binary_join_element_wise(lines, nl, "")
            # the lines, one after the other, are the bytes of the array's data buffer
            _, offsets, values = lines.buffers()
            bounds = np.frombuffer(offsets, dtype=np.int32)[[lines.offset, lines.offset + len(lines)]]
            data += values.to_pybytes()[bounds[0]:bounds[1]]
        self.stream.write(data)


def _column_text(column: Any, t: DataType, opts: dict[str, Any]) -> Any:
    """A column as the text Flink's CSV format (Jackson) writes for it: booleans ``true`` and
    ``false``, timestamps ``2026-11-24 08:00:00.123`` (the fraction without trailing zeros),
    doubles with a ``.0`` where whole and ``1.0E20``; strings, dates, times and timestamps
    quoted only where Jackson quotes them, numbers never."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(t, BooleanType):
        return pc.if_else(column, "true", "false")
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        text = pc.strftime(column, "%Y-%m-%d %H:%M:%S")
        text = pc.replace_substring_regex(text, r"(\.\d*?)0+$", r"\1")
        return _jackson_quoted(pc.replace_substring_regex(text, r"\.$", ""), opts)
    if isinstance(t, (FloatType, DoubleType)):
        text = pc.replace_substring_regex(column.cast(pa.string()), r"^(-?\d+)$", r"\1.0")
        if isinstance(t, DoubleType):  # Java's scientific range: below 10^-3 and from 10^7
            size = pc.abs(column)
            scientific = pc.or_(pc.greater_equal(size, 1e7),
                                pc.and_(pc.less(size, 1e-3), pc.not_equal(size, 0.0)))
            return _python_where(scientific, column, text, java_double)
        text = pc.replace_substring_regex(text, r"^(-?\d)e", r"\1.0e")
        return pc.replace_substring_regex(text, r"e\+?(-?)0*(\d+)$", r"E\1\2")
    if isinstance(t, DecimalType):
        # Flink writes a decimal without trailing zeros, as Java's BigDecimal: 12.30 as 12.3,
        # 1.00 as 1, 100.00 as 1E+2
        text = pc.replace_substring_regex(column.cast(pa.string()), r"(\.\d*?)0+$", r"\1")
        text = pc.replace_substring_regex(text, r"\.$", "")
        scientific = pc.match_substring_regex(text, r"^-?\d*[1-9]0+$|^-?0\.0{6}")
        return _python_where(scientific, text, text, java_decimal)
    if isinstance(t, (IntegralType, FractionalType)):
        return column.cast(pa.string())
    return _jackson_quoted(column.cast(pa.string()), opts)


def number_text(column: Any, t: DataType) -> Any:
    """A column of numbers or booleans as Jackson writes them (``1.0E20``, ``12.3``, ``1E+2``,
    ``true``): shared with the table ``json`` format, which writes them the same."""
    return _column_text(column, t, {})


def _python_where(mask: Any, values: Any, text: Any, render: Callable[[Any], str]) -> Any:
    """``text``, with ``render(value)`` where ``mask`` holds (a few values: done in Python)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pc.any(mask).as_py():
        return text
    flags, originals, texts = mask.to_pylist(), values.to_pylist(), text.to_pylist()
    return pa.array([render(v) if f else s for f, v, s in zip(flags, originals, texts)], pa.string())


def _jackson_quoted(text: Any, opts: dict[str, Any]) -> Any:
    """Strings quoted as Jackson's CSV writer quotes them by default: a value with a character
    below the "safe" one (the largest of separator, quote and line separator, plus one: with
    ``,`` anything below ``-``, such as a space, a comma, a quote) is quoted, its quotes doubled;
    an empty string is written empty."""
    import pyarrow.compute as pc

    quote = opts["quote_char"]
    if not quote:
        return text
    safe = max(ord(c) for c in opts["column_separator"] + quote + opts["line_separator"]) + 1
    unsafe = f"[\\x00-\\x{min(safe, 0x80) - 1:02x}]"
    escape = opts["escape_char"]
    if escape:
        unsafe = f"{unsafe}|{re.escape(escape)}"
    needs = pc.match_substring_regex(text, unsafe)
    doubled = pc.replace_substring(text, quote, quote + quote)
    quoted = pc.binary_join_element_wise(quote, doubled, quote, "")
    return pc.if_else(pc.fill_null(needs, False), quoted, text)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class CsvBulkWriters:
    """Writer factories for CSV files (PyFlink's ``CsvBulkWriters``)."""

    @staticmethod
    def for_schema(schema: CsvSchema) -> BulkWriterFactory:
        """A BulkWriterFactory writing records as lines of ``schema``'s columns."""
        if not isinstance(schema, CsvSchema):
            raise TypeError(f"CsvBulkWriters.for_schema takes a CsvSchema, not {schema!r}")
        return _CsvWriterFactory(schema)


#: PyFlink 1.16's name
CsvBulkWriter = CsvBulkWriters

