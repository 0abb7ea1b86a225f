"""``pyflink.datastream.execution_mode``."""

from .._exports import lazy_exports

_NAMES = {
    'RuntimeExecutionMode': 'sessioncluster.common.execution_mode',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
