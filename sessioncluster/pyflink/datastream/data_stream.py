"""``pyflink.datastream.data_stream``."""

from .._exports import lazy_exports

_NAMES = {
    'AllWindowedStream': 'sessioncluster.client.environment',
    'ConnectedStreams': 'sessioncluster.client.environment',
    'DataStream': 'sessioncluster.client.environment',
    'KeyedStream': 'sessioncluster.client.environment',
    'WindowedStream': 'sessioncluster.client.environment',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
