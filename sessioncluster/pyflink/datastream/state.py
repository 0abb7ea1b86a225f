"""``pyflink.datastream.state``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregatingState': 'sessioncluster.state',
    'AggregatingStateDescriptor': 'sessioncluster.state',
    'ListState': 'sessioncluster.state',
    'ListStateDescriptor': 'sessioncluster.state',
    'MapState': 'sessioncluster.state',
    'MapStateDescriptor': 'sessioncluster.state',
    'ReducingState': 'sessioncluster.state',
    'ReducingStateDescriptor': 'sessioncluster.state',
    'State': 'sessioncluster.state',
    'StateDescriptor': 'sessioncluster.state',
    'StateTtlConfig': 'sessioncluster.state',
    'ValueState': 'sessioncluster.state',
    'ValueStateDescriptor': 'sessioncluster.state',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
