"""``pyflink.table.table_result``."""

from .._exports import lazy_exports

_NAMES = {
    'TableResult': 'sessioncluster.api.table.result',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
