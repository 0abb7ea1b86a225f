"""``pyflink.table.table_pipeline``."""

from .._exports import lazy_exports

_NAMES = {
    'TablePipeline': 'sessioncluster.api.table.table_pipeline',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
