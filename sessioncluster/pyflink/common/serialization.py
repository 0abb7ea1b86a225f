"""``pyflink.common.serialization``."""

from .._exports import lazy_exports

_NAMES = {
    'BulkWriterFactory': 'sessioncluster.common.serialization',
    'ByteArraySchema': 'sessioncluster.common.serialization',
    'DeserializationSchema': 'sessioncluster.common.serialization',
    'Encoder': 'sessioncluster.common.serialization',
    'SerializationSchema': 'sessioncluster.common.serialization',
    'SimpleStringSchema': 'sessioncluster.common.serialization',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
