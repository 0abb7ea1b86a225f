"""``pyflink.datastream.formats.csv``."""

from ..._exports import lazy_exports

_NAMES = {
    'CsvBulkWriter': 'sessioncluster.api.formats.csv',
    'CsvBulkWriters': 'sessioncluster.api.formats.csv',
    'CsvReaderFormat': 'sessioncluster.api.formats.csv',
    'CsvSchema': 'sessioncluster.api.formats.csv',
    'CsvSchemaBuilder': 'sessioncluster.api.formats.csv',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
