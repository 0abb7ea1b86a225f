"""``pyflink.common.configuration``."""

from .._exports import lazy_exports

_NAMES = {
    'Configuration': 'sessioncluster.common.configuration',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
