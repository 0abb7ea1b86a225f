"""Parquet (``pyflink.datastream.formats.parquet``), read and written by pyarrow a record batch at
a time: ``ParquetColumnarRowInputFormat``, ``ParquetBulkWriters``, ``AvroParquetReaders``,
``AvroParquetWriters``."""

from __future__ import annotations

from typing import Any, BinaryIO, Iterator

from ...common.serialization import BulkWriter, BulkWriterFactory
from ...common.typeinfo import RowTypeInfo
from ..table.typeinfotypes import row_type_of
from ..table.types import RowType
from .avro import AvroSchema, avro_records_of, avro_row_type
from .base import (
    ArrowBulkWriter,
    ColumnarRowFormat,
    FileFormatError,
    NonClosingStream,
    StreamFormat,
    local_path,
    open_file,
    read_errors_named,
)


def _compatible(found: Any, wanted: Any) -> bool:
    """True when a column of Arrow type ``found`` reads as ``wanted`` without losing values
    (the same type, a wider integer or float, a string of another width or a dictionary,
    a timestamp of another unit)."""
    import pyarrow as pa
    import pyarrow.types as t

    if found.equals(wanted):
        return True
    if t.is_dictionary(found):
        return _compatible(found.value_type, wanted)
    if t.is_integer(found) and t.is_integer(wanted):
        return bool(wanted.bit_width >= found.bit_width)
    if t.is_floating(found) and t.is_floating(wanted):
        return bool(wanted.bit_width >= found.bit_width)
    texts = (t.is_string, t.is_large_string)
    if any(f(found) for f in texts) and any(f(wanted) for f in texts):
        return True
    if (t.is_binary(found) or t.is_large_binary(found)) and t.is_binary(wanted):
        return True
    if t.is_timestamp(found) and t.is_timestamp(wanted):
        return True
    if t.is_decimal(found) and t.is_decimal(wanted):
        return bool(found.scale == wanted.scale and wanted.precision >= found.precision)
    if (t.is_list(found) or t.is_large_list(found)) and t.is_list(wanted):
        return _compatible(found.value_type, wanted.value_type)
    if t.is_struct(found) and t.is_struct(wanted):
        fields = {f.name: f.type for f in found}
        return all(f.name in fields and _compatible(fields[f.name], f.type) for f in wanted)
    if t.is_map(found) and t.is_map(wanted):
        return _compatible(found.key_type, wanted.key_type) and _compatible(found.item_type, wanted.item_type)
    return bool(found == pa.null())


def read_columns(path: str, table_schema: Any, row_type: RowType, case_sensitive: bool = True
                 ) -> tuple[list[str], list[str]]:
    """The file's columns to read for ``row_type``'s fields (by name), and the fields the file
    lacks (read as nulls, as Flink's Parquet reader does); a column of another type fails,
    naming the file."""
    found = {(n if case_sensitive else n.lower()): n for n in table_schema.names}
    columns, missing = [], []
    for f in row_type.fields:
        name = found.get(f.name if case_sensitive else f.name.lower())
        if name is None:
            if not f.data_type.is_nullable:
                raise FileFormatError(f"{local_path(path)} has no column '{f.name}' (declared "
                                      f"{f.data_type}) and it is NOT NULL")
            missing.append(f.name)
            continue
        file_type = table_schema.field(name).type
        if not _compatible(file_type, f.data_type.to_arrow()):
            raise FileFormatError(
                f"{local_path(path)}: column '{name}' is {file_type} in the file, the declared row "
                f"type has {f.name} {f.data_type}: the file does not match the row type")
        columns.append(name)
    return columns, missing


def conformed(batch: Any, columns: list[str], row_type: RowType) -> Any:
    """A batch of the file's ``columns`` as a table of exactly ``row_type``'s columns and types."""
    import pyarrow as pa

    by_name = dict(zip(columns, batch.columns))
    lower = {c.lower(): a for c, a in by_name.items()}
    arrays = []
    for f in row_type.fields:
        wanted = f.data_type.to_arrow()
        array = by_name.get(f.name, lower.get(f.name.lower()))
        if array is None:
            arrays.append(pa.nulls(batch.num_rows, wanted))
            continue
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        arrays.append(array if array.type.equals(wanted) else array.cast(wanted))
    return pa.Table.from_arrays(arrays, names=row_type.field_names())


class ParquetColumnarRowInputFormat(ColumnarRowFormat):
    """Reads Parquet files into Rows of ``row_type``'s fields, ``batch_size`` rows at a time
    (PyFlink's ``ParquetColumnarRowInputFormat``). Columns are found by name; a column whose
    type does not match fails the job, naming the file; a missing nullable column reads as null."""

    def __init__(self, row_type: Any = None, hadoop_config: Any = None, batch_size: int = 2048,
                 is_utc_timestamp: bool = False, is_case_sensitive: bool = True) -> None:
        if not isinstance(row_type, (RowType, RowTypeInfo)) and isinstance(hadoop_config,
                                                                           (RowType, RowTypeInfo)):
            row_type, hadoop_config = hadoop_config, row_type  # PyFlink 1.16's argument order
        self.row_type = row_type_of(row_type)
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.batch_size = batch_size
        self.is_utc_timestamp = is_utc_timestamp
        self.is_case_sensitive = is_case_sensitive

    def _batches(self, path: str) -> Iterator[Any]:
        import pyarrow.parquet as pq

        with open_file(path) as raw:
            pf = pq.ParquetFile(raw)
            columns, _ = read_columns(path, pf.schema_arrow, self.row_type, self.is_case_sensitive)
            for batch in pf.iter_batches(batch_size=self.batch_size, columns=columns,
                                         use_threads=False):
                yield conformed(batch, columns, self.row_type)

    def __repr__(self) -> str:
        return f"ParquetColumnarRowInputFormat({self.row_type})"


class _ParquetWriterFactory(BulkWriterFactory):
    def __init__(self, row_type: RowType, compression: str = "snappy") -> None:
        self.row_type = row_type
        self.compression = compression

    def arrow_row_type(self) -> RowType:
        """Its writers take Arrow batches of this row type as they are."""
        return self.row_type

    def create(self, stream: BinaryIO) -> BulkWriter:
        import pyarrow.parquet as pq

        writer = pq.ParquetWriter(NonClosingStream(stream), self.row_type.arrow_schema(),
                                  compression=self.compression)
        return ArrowBulkWriter(self.row_type, writer.write_batch, writer.close)

    def __repr__(self) -> str:
        return f"ParquetBulkWriters.for_row_type({self.row_type})"


class ParquetBulkWriters:
    """Writer factories for Parquet files (PyFlink's ``ParquetBulkWriters``)."""

    @staticmethod
    def for_row_type(row_type: Any, hadoop_config: Any = None, utc_timestamp: bool = False
                     ) -> BulkWriterFactory:
        """Writes Rows of ``row_type`` (``DataTypes.ROW`` or ``Types.ROW_NAMED``) to Parquet files,
        a row group per batch of records."""
        return _ParquetWriterFactory(row_type_of(row_type))


class _AvroParquetFormat(StreamFormat):
    """Parquet files read as Avro generic records (dicts of the schema's fields)."""

    def __init__(self, schema: AvroSchema) -> None:
        super().__init__("avro_parquet")
        self.schema = schema
        self.row_type = avro_row_type(schema)

    def read_file(self, path: str) -> Iterator[Any]:
        return read_errors_named(path, self._records(path))

    def _records(self, path: str) -> Iterator[Any]:
        import pyarrow.parquet as pq

        with open_file(path) as raw:
            pf = pq.ParquetFile(raw)
            columns, _ = read_columns(path, pf.schema_arrow, self.row_type)
            for batch in pf.iter_batches(columns=columns, use_threads=False):
                yield from avro_records_of(conformed(batch, columns, self.row_type), self.schema)

    def __repr__(self) -> str:
        return f"AvroParquetReaders.for_generic_record({self.schema})"


class AvroParquetReaders:
    """Reads Parquet files as Avro generic records (PyFlink's ``AvroParquetReaders``)."""

    @staticmethod
    def for_generic_record(schema: AvroSchema) -> StreamFormat:
        """A StreamFormat reading Parquet files into dicts of ``schema``'s fields."""
        return _AvroParquetFormat(schema)


class _AvroParquetWriterFactory(_ParquetWriterFactory):
    def __init__(self, schema: AvroSchema) -> None:
        super().__init__(avro_row_type(schema))
        self.schema = schema

    def __repr__(self) -> str:
        return f"AvroParquetWriters.for_generic_record({self.schema})"


class AvroParquetWriters:
    """Writes Avro generic records (dicts, or Rows of the schema's fields) to Parquet files
    (PyFlink's ``AvroParquetWriters``)."""

    @staticmethod
    def for_generic_record(schema: AvroSchema) -> BulkWriterFactory:
        return _AvroParquetWriterFactory(schema)
