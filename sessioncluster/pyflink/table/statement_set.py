"""``pyflink.table.statement_set``."""

from .._exports import lazy_exports

_NAMES = {
    'StatementSet': 'sessioncluster.api.table.statement_set',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
