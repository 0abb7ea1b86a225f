"""``pyflink.table.table_config``."""

from .._exports import lazy_exports

_NAMES = {
    'TableConfig': 'sessioncluster.api.table.environment',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
