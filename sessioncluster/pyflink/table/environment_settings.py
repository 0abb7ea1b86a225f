"""``pyflink.table.environment_settings``."""

from .._exports import lazy_exports

_NAMES = {
    'EnvironmentSettings': 'sessioncluster.api.table.environment',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
