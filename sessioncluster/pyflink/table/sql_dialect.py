"""``pyflink.table.sql_dialect``."""

from .._exports import lazy_exports

_NAMES = {
    'SqlDialect': 'sessioncluster.api.table.catalogobjects',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
