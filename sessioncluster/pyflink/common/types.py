"""``pyflink.common.types``."""

from .._exports import lazy_exports

_NAMES = {
    'Row': 'sessioncluster.common.types',
    'RowKind': 'sessioncluster.common.types',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
