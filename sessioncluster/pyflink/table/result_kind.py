"""``pyflink.table.result_kind``."""

from .._exports import lazy_exports

_NAMES = {
    'ResultKind': 'sessioncluster.api.table.result',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
