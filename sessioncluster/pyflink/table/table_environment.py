"""``pyflink.table.table_environment``."""

from .._exports import lazy_exports

_NAMES = {
    'StreamTableEnvironment': 'sessioncluster.client.table_environment',
    'TableEnvironment': 'sessioncluster.client.table_environment',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
