"""``pyflink.table.table``."""

from .._exports import lazy_exports

_NAMES = {
    'GroupWindowedTable': 'sessioncluster.api.table.table',
    'GroupedTable': 'sessioncluster.api.table.table',
    'OverWindowedTable': 'sessioncluster.api.table.table',
    'Table': 'sessioncluster.api.table.table',
    'WindowGroupedTable': 'sessioncluster.api.table.table',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
