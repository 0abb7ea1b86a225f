"""``pyflink.table.data_view``."""

from .._exports import lazy_exports

_NAMES = {
    'DataView': 'sessioncluster.api.table.dataview',
    'ListView': 'sessioncluster.api.table.dataview',
    'MapView': 'sessioncluster.api.table.dataview',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
