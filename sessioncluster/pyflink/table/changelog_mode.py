"""``pyflink.table.changelog_mode``."""

from .._exports import lazy_exports

_NAMES = {
    'ChangelogMode': 'sessioncluster.api.table.changelog_mode',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
