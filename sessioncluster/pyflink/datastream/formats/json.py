"""``pyflink.datastream.formats.json``."""

from ..._exports import lazy_exports

_NAMES = {
    'JsonRowDeserializationSchema': 'sessioncluster.api.formats.json',
    'JsonRowSerializationSchema': 'sessioncluster.api.formats.json',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
