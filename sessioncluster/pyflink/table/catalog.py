"""``pyflink.table.catalog``."""

from .._exports import lazy_exports

_NAMES = {
    'ObjectIdentifier': 'sessioncluster.api.table.catalogobjects',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
