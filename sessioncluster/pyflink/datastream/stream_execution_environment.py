"""``pyflink.datastream.stream_execution_environment``."""

from .._exports import lazy_exports

_NAMES = {
    'StreamExecutionEnvironment': 'sessioncluster.client.environment',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
