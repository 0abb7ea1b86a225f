"""``pyflink.datastream.data_stream``."""

from .._exports import lazy_exports

_NAMES = {
    'AllWindowedStream': 'sessioncluster.client.datastream',
    'ConnectedStreams': 'sessioncluster.client.datastream',
    'DataStream': 'sessioncluster.client.datastream',
    'KeyedStream': 'sessioncluster.client.datastream',
    'WindowedStream': 'sessioncluster.client.datastream',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
