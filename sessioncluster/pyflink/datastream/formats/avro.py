"""``pyflink.datastream.formats.avro``."""

from ..._exports import lazy_exports

_NAMES = {
    'AvroInputFormat': 'sessioncluster.api.formats.avro',
    'AvroSchema': 'sessioncluster.api.formats.avro',
    'AvroWriters': 'sessioncluster.api.formats.avro',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
