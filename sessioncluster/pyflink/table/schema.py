"""``pyflink.table.schema``."""

from .._exports import lazy_exports

_NAMES = {
    'Schema': 'sessioncluster.api.table.descriptor',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
