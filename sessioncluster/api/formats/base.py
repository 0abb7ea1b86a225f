"""What the formats share: Flink's ``BulkWriter`` interface, records to and from Arrow columns,
and opening a file (decompressed by its extension) with errors that name it.

Records are PyFlink's: ``Row``s with the row type's field names, typed by ``Types.ROW_NAMED``.
"""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from ...common.serialization import BulkWriter
from ...common.types import Row
from ..table.types import ArrayType, DataType, MapType, RowType

#: rows a BulkWriter buffers before it writes them as one Arrow record batch
WRITE_BATCH_ROWS = 8192


class FileFormatError(ValueError):
    """A file a format cannot read: names the file (and the line, where there is one)."""


class ArrowBulkWriter(BulkWriter):
    """A BulkWriter that buffers rows and hands them on as Arrow record batches to ``write``
    (at most ``WRITE_BATCH_ROWS`` each); ``close`` ends the file (its footer)."""

    def __init__(self, row_type: RowType, write: Callable[[Any], None],
                 close: Callable[[], None] | None = None) -> None:
        self.row_type = row_type
        self._write = write
        self._close = close
        self._rows: list[Any] = []
        self._finished = False

    def add_element(self, element: Any) -> None:
        if self._finished:
            raise RuntimeError("this BulkWriter is finished")
        self._rows.append(element)
        if len(self._rows) >= WRITE_BATCH_ROWS:
            self._write_buffered()

    def add_batch(self, batch: Any) -> None:
        """Write an Arrow record batch (or table) of the row type's columns as it is, after the
        rows added before it (the table connectors hand over Spark's batches so, a FileSource
        its files' tables); timestamps are truncated to the type's precision."""
        if self._finished:
            raise RuntimeError("this BulkWriter is finished")
        self._write_buffered()
        import pyarrow as pa

        schema = self.row_type.arrow_schema()
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        for piece in table.cast(schema, safe=False).to_batches():
            self._write(piece)

    def _write_buffered(self) -> None:
        if self._rows:
            batch = to_arrow_batch(self._rows, self.row_type)
            self._rows = []
            self._write(batch)

    def flush(self) -> None:
        self._write_buffered()

    def finish(self) -> None:
        if self._finished:
            return
        self._write_buffered()
        self._finished = True
        if self._close is not None:
            self._close()


class NonClosingStream(io.RawIOBase):
    """A view of a stream whose ``close`` leaves the stream open: a writer that closes its sink
    when it ends the file (pyarrow's) must not close the FileSink's part file."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._stream.write(data)
        return len(data)

    def flush(self) -> None:
        self._stream.flush()

    def tell(self) -> int:
        return self._stream.tell()

    def seekable(self) -> bool:
        return False


# -- how a FileSource reads files ----------------------------------------------------------------

class StreamFormat:
    """How a FileSource reads records from a file, record after record (PyFlink's
    ``StreamFormat``): ``text_line_format`` (a record per line, without its line break), or a
    format of ``pyflink.datastream.formats`` (``CsvReaderFormat``, ``AvroParquetReaders``).

    A file whose name ends in ``.gz`` (``.bz2``, ``.xz``, ``.zst``) is decompressed, as Flink's
    FileSource does."""

    def __init__(self, kind: str, charset_name: str = "UTF-8") -> None:
        self.kind = kind
        self.charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> "StreamFormat":
        import codecs

        try:
            codecs.lookup(charset_name)
        except LookupError:
            raise ValueError(f"unknown charset {charset_name!r}") from None
        return StreamFormat("text_line", charset_name)

    def produced_type(self) -> Any:
        """The TypeInformation of the records (None: untyped, as a text line is a str)."""
        return None

    def read_file(self, path: str) -> Iterator[Any]:
        """The records of one file (``path`` local or a URI, as Spark lists it)."""
        return read_errors_named(path, self._lines(path))

    def _lines(self, path: str) -> Iterator[str]:
        with open_decompressed(path) as raw:
            text = io.TextIOWrapper(raw, encoding=self.charset_name)
            for line in text:
                yield line[:-1] if line.endswith("\n") else line

    def __repr__(self) -> str:
        return f"StreamFormat.text_line_format({self.charset_name!r})"


class BulkFormat:
    """How a FileSource reads a file a batch of records at a time (PyFlink's ``BulkFormat``):
    ``ParquetColumnarRowInputFormat``, ``OrcColumnarRowInputFormat``, ``AvroInputFormat``."""

    def produced_type(self) -> Any:
        """The TypeInformation of the records (``Types.ROW_NAMED``)."""
        return None

    def read_file(self, path: str) -> Iterator[Any]:
        """The records of one file (``path`` local or a URI, as Spark lists it)."""
        raise NotImplementedError


class ColumnarRowFormat(BulkFormat):
    """A columnar bulk format (Parquet, ORC) reading Rows of its ``row_type``: errors name the
    file; subclasses give ``_batches(path)``, Arrow tables of exactly the row type's columns.

    Its records can also travel as those Arrow tables (``arrow_row_type``, ``read_batches``):
    a source that feeds a bulk FileSink with no function between them copies them so."""

    row_type: RowType

    def produced_type(self) -> Any:
        return self.row_type.to_type_info()

    def read_file(self, path: str) -> Iterator[Any]:
        return read_errors_named(path, self._records(path))

    def arrow_row_type(self) -> RowType | None:
        """The row type of the Arrow tables ``read_batches`` gives."""
        return self.row_type

    def read_batches(self, path: str) -> Iterator[Any]:
        """The file's records as Arrow tables of ``arrow_row_type``'s columns (no Row made)."""
        return read_errors_named(path, self._batches(path))

    def _records(self, path: str) -> Iterator[Any]:
        for table in self._batches(path):
            yield from rows_of(table, self.row_type)

    def _batches(self, path: str) -> Iterator[Any]:
        raise NotImplementedError


def arrow_row_type(obj: Any) -> RowType | None:
    """The row type of the Arrow batches a source format reads (``read_batches``) or a bulk
    writer factory's writers take as they are (``add_batch``); None: records only, as Rows."""
    method = getattr(obj, "arrow_row_type", None)
    found = method() if callable(method) else None
    return found if isinstance(found, RowType) else None


# -- records <-> Arrow ----------------------------------------------------------------------------

def _field_value(record: Any, index: int, name: str) -> Any:
    # a Row's fields by position, as Flink serializes a Row by its RowTypeInfo
    if isinstance(record, dict):
        return record.get(name)
    return record[index]


def _to_arrow_value(value: Any, data_type: DataType) -> Any:
    """A Python value as pyarrow's ``pa.array`` takes it for ``data_type``."""
    if value is None:
        return None
    if isinstance(data_type, RowType):
        return {f.name: _to_arrow_value(_field_value(value, i, f.name), f.data_type)
                for i, f in enumerate(data_type.fields)}
    if isinstance(data_type, ArrayType):
        return [_to_arrow_value(v, data_type.element_type) for v in value]
    if isinstance(data_type, MapType):
        return [(_to_arrow_value(k, data_type.key_type), _to_arrow_value(v, data_type.value_type))
                for k, v in value.items()]
    return value


def _is_plain(data_type: DataType) -> bool:
    return not isinstance(data_type, (RowType, ArrayType, MapType))


def to_arrow_batch(records: list[Any], row_type: RowType) -> Any:
    """An Arrow record batch of ``records`` (Rows, tuples or dicts), a column per field."""
    import pyarrow as pa

    arrays = []
    for i, f in enumerate(row_type.fields):
        t = f.data_type
        values = [_field_value(r, i, f.name) for r in records]
        if not _is_plain(t):
            values = [_to_arrow_value(v, t) for v in values]
        try:
            arrays.append(pa.array(values, t.to_arrow()))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise TypeError(f"field '{f.name}' ({t}) of the records cannot be written: "
                            f"{type(exc).__name__}: {exc}") from exc
    return pa.RecordBatch.from_arrays(arrays, schema=row_type.arrow_schema())


def _from_arrow_value(value: Any, data_type: DataType) -> Any:
    if value is None:
        return None
    if isinstance(data_type, RowType):
        factory = Row(*data_type.field_names())
        return factory(*(_from_arrow_value(value.get(f.name), f.data_type) for f in data_type.fields))
    if isinstance(data_type, ArrayType):
        return [_from_arrow_value(v, data_type.element_type) for v in value]
    if isinstance(data_type, MapType):
        return {_from_arrow_value(k, data_type.key_type): _from_arrow_value(v, data_type.value_type)
                for k, v in value}
    return value


def rows_of(table: Any, row_type: RowType) -> Iterator[Row]:
    """The records of an Arrow table or record batch with the row type's columns: Rows of its
    field names, built a column at a time."""
    factory = Row(*row_type.field_names())
    columns = []
    for f in row_type.fields:
        values = table.column(f.name).to_pylist()
        if not _is_plain(f.data_type):
            values = [_from_arrow_value(v, f.data_type) for v in values]
        columns.append(values)
    if not columns:
        return iter(())
    return (factory(*values) for values in zip(*columns))


def java_double(x: float) -> str:
    """A double as Java's ``Double.toString`` (so Jackson) writes it: ``1.5``, ``0.0``,
    ``1.0E20``, ``1.234E-5`` (scientific below 10^-3 and from 10^7)."""
    if x != x:
        return '"NaN"'  # Jackson quotes the non-numbers
    if x in (float("inf"), float("-inf")):
        return '"Infinity"' if x > 0 else '"-Infinity"'
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)  # positional, with a ".0" where whole, as Java's
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) - 1 + int(exponent)
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{power}"


def java_decimal(text: str) -> str:
    """A decimal's plain text without trailing zeros (``100``, ``0.0000001``) as Java's
    ``BigDecimal.stripTrailingZeros().toString()`` writes it (``1E+2``, ``1E-7``), as Flink's
    csv and json formats do."""
    sign = "-" if text.startswith("-") else ""
    sign_less = text.lstrip("-")
    _, digits, exponent = Decimal(sign_less).normalize().as_tuple()
    shown = "".join(map(str, digits))
    adjusted = len(digits) - 1 + int(exponent)
    if int(exponent) <= 0 and adjusted >= -6:
        return text
    mantissa = shown[0] + ("." + shown[1:] if len(shown) > 1 else "")
    return f"{sign}{mantissa}E{adjusted:+d}"


# -- opening files -----------------------------------------------------------------------------

def local_path(path: str) -> str:
    """A ``file:`` URI (Spark lists files so) as a local path; other paths as they are."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def open_file(path: str) -> BinaryIO:
    """The file's bytes, read as a stream: local, or any filesystem pyarrow knows by URI
    (``hdfs://``, ``s3://``)."""
    local = local_path(path)
    if "://" in local:
        import pyarrow.fs as pafs

        fs, inner = pafs.FileSystem.from_uri(local)
        return fs.open_input_stream(inner)
    return open(local, "rb")


def open_decompressed(path: str) -> BinaryIO:
    """The file's bytes, decompressed when its name says so (``.gz``, ``.bz2``, ``.xz``,
    ``.zst``... as Flink's FileSource picks its decompressor by extension)."""
    raw = open_file(path)
    name = path.lower()
    if name.endswith((".gz", ".gzip")):
        import gzip
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if name.endswith(".bz2"):
        import bz2
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if name.endswith((".xz", ".lzma")):
        import lzma
        return lzma.LZMAFile(raw, mode="rb")  # type: ignore[return-value]
    if name.endswith((".zst", ".zstd")):
        import pyarrow as pa
        return pa.CompressedInputStream(raw, "zstd")
    return raw


def json_lines(path: str) -> Iterator[tuple[int, str, Any]]:
    """Each non-blank line of a text file of JSON values (decompressed as its name says): its
    number, its text and the parsed value (numbers with a fraction as Decimals), or the
    ``ValueError`` it raised."""
    import json
    from decimal import Decimal

    with open_decompressed(path) as raw:
        for number, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8"), 1):
            if not line.strip():
                continue
            try:
                yield number, line, json.loads(line, parse_float=Decimal)
            except ValueError as exc:
                yield number, line, exc


def read_errors_named(path: str, records: Iterable[Any]) -> Iterator[Any]:
    """``records`` read from ``path``; an error reading them names the file (a truncated or
    corrupt file, an unreadable one)."""
    try:
        yield from records
    except FileFormatError:
        raise
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise FileFormatError(f"cannot read {local_path(path)}: {type(exc).__name__}: {exc}") from exc
    except Exception as exc:
        if type(exc).__module__.startswith(("pyarrow", "fastavro")):
            raise FileFormatError(
                f"cannot read {local_path(path)}: {type(exc).__name__}: {exc}") from exc
        raise
