"""``pyflink.common.restart_strategy`` (from ``sessioncluster.api.restart``)."""

from .._exports import lazy_exports

_NAMES = {
    'RestartStrategies': 'sessioncluster.api.restart',
    'RestartStrategyConfiguration': 'sessioncluster.api.restart',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
