"""``pyflink.table.table_descriptor``."""

from .._exports import lazy_exports

_NAMES = {
    'FormatDescriptor': 'sessioncluster.api.table.descriptor',
    'TableDescriptor': 'sessioncluster.api.table.descriptor',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
