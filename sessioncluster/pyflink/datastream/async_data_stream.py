"""``pyflink.datastream.async_data_stream``."""

from .._exports import lazy_exports

_NAMES = {
    'AsyncDataStream': 'sessioncluster.client.asyncstream',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
