"""``pyflink.common.restart_strategy`` (from ``sessioncluster.restart``)."""

from .._exports import lazy_exports

_NAMES = {
    'RestartStrategies': 'sessioncluster.restart',
    'RestartStrategyConfiguration': 'sessioncluster.restart',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
