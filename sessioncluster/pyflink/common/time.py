"""``pyflink.common.time``."""

from .._exports import lazy_exports

_NAMES = {
    'Duration': 'sessioncluster.common.time',
    'Instant': 'sessioncluster.common.time',
    'Time': 'sessioncluster.common.time',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
