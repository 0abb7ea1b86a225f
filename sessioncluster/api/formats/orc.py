"""ORC (``pyflink.datastream.formats.orc``) with pyarrow: ``OrcBulkWriters`` (PyFlink's), and
``OrcColumnarRowInputFormat`` to read ORC files with a FileSource (Flink's Java name)."""

from __future__ import annotations

from typing import Any, BinaryIO, Iterator

from ...common.serialization import BulkWriter, BulkWriterFactory
from ..table.typeinfotypes import row_type_of
from ..table.types import RowType
from .base import (
    ArrowBulkWriter,
    ColumnarRowFormat,
    NonClosingStream,
    open_file,
)
from .parquet import conformed, read_columns


class _OrcWriterFactory(BulkWriterFactory):
    def __init__(self, row_type: RowType, writer_properties: Any = None) -> None:
        self.row_type = row_type
        self.writer_properties = writer_properties

    def arrow_row_type(self) -> RowType:
        """Its writers take Arrow batches of this row type as they are."""
        return self.row_type

    def create(self, stream: BinaryIO) -> BulkWriter:
        import pyarrow as pa
        import pyarrow.orc as orc

        writer = orc.ORCWriter(NonClosingStream(stream))
        schema = self.row_type.arrow_schema()

        def write(batch: Any) -> None:
            writer.write(pa.Table.from_batches([batch], schema=schema))

        return ArrowBulkWriter(self.row_type, write, writer.close)

    def __repr__(self) -> str:
        return f"OrcBulkWriters.for_row_type({self.row_type})"


class OrcBulkWriters:
    """Writer factories for ORC files (PyFlink's ``OrcBulkWriters``)."""

    @staticmethod
    def for_row_type(row_type: Any, writer_properties: Any = None, hadoop_config: Any = None
                     ) -> BulkWriterFactory:
        """Writes Rows of ``row_type`` (``DataTypes.ROW`` or ``Types.ROW_NAMED``) to ORC files."""
        return _OrcWriterFactory(row_type_of(row_type), writer_properties)


class OrcColumnarRowInputFormat(ColumnarRowFormat):
    """Reads ORC files into Rows of ``row_type``'s fields, a stripe at a time; a column of
    another type fails the job, naming the file."""

    def __init__(self, row_type: Any, batch_size: int = 2048) -> None:
        self.row_type = row_type_of(row_type)
        self.batch_size = batch_size

    def _batches(self, path: str) -> Iterator[Any]:
        import pyarrow.orc as orc

        with open_file(path) as raw:
            f = orc.ORCFile(raw)
            columns, _ = read_columns(path, f.schema, self.row_type)
            for i in range(f.nstripes):
                stripe = f.read_stripe(i, columns=columns)
                yield conformed(stripe, columns, self.row_type)

    def __repr__(self) -> str:
        return f"OrcColumnarRowInputFormat({self.row_type})"
