"""``pyflink.common.execution_config``."""

from .._exports import lazy_exports

_NAMES = {
    'ExecutionConfig': 'sessioncluster.common.execution_config',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
