"""``pyflink.table.module``."""

from .._exports import lazy_exports

_NAMES = {
    'ModuleEntry': 'sessioncluster.api.table.catalogobjects',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
