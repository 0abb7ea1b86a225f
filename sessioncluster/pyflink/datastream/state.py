"""``pyflink.datastream.state``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregatingState': 'sessioncluster.api.state',
    'AggregatingStateDescriptor': 'sessioncluster.api.state',
    'ListState': 'sessioncluster.api.state',
    'ListStateDescriptor': 'sessioncluster.api.state',
    'MapState': 'sessioncluster.api.state',
    'MapStateDescriptor': 'sessioncluster.api.state',
    'ReducingState': 'sessioncluster.api.state',
    'ReducingStateDescriptor': 'sessioncluster.api.state',
    'State': 'sessioncluster.api.state',
    'StateDescriptor': 'sessioncluster.api.state',
    'StateTtlConfig': 'sessioncluster.api.state',
    'ValueState': 'sessioncluster.api.state',
    'ValueStateDescriptor': 'sessioncluster.api.state',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
