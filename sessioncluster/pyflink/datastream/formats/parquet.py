"""``pyflink.datastream.formats.parquet``."""

from ..._exports import lazy_exports

_NAMES = {
    'AvroParquetReaders': 'sessioncluster.api.formats.parquet',
    'AvroParquetWriters': 'sessioncluster.api.formats.parquet',
    'ParquetBulkWriters': 'sessioncluster.api.formats.parquet',
    'ParquetColumnarRowInputFormat': 'sessioncluster.api.formats.parquet',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
