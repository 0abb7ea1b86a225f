"""``pyflink.table``."""

from .._exports import lazy_exports

_NAMES = {
    'DataTypes': 'sessioncluster.api.table.types',
    'Row': 'sessioncluster.common.types',
    'RowKind': 'sessioncluster.common.types',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
