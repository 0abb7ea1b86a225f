"""``pyflink.datastream.timerservice``."""

from .._exports import lazy_exports

_NAMES = {
    'TimerService': 'sessioncluster.api.functions',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
