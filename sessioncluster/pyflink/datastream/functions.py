"""``pyflink.datastream.functions``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregateFunction': 'sessioncluster.functions',
    'AllWindowFunction': 'sessioncluster.functions',
    'CoFlatMapFunction': 'sessioncluster.functions',
    'CoMapFunction': 'sessioncluster.functions',
    'CoProcessFunction': 'sessioncluster.functions',
    'FilterFunction': 'sessioncluster.functions',
    'FlatMapFunction': 'sessioncluster.functions',
    'Function': 'sessioncluster.functions',
    'KeySelector': 'sessioncluster.functions',
    'KeyedCoProcessFunction': 'sessioncluster.functions',
    'KeyedProcessFunction': 'sessioncluster.functions',
    'MapFunction': 'sessioncluster.functions',
    'ProcessAllWindowFunction': 'sessioncluster.functions',
    'ProcessFunction': 'sessioncluster.functions',
    'ProcessWindowFunction': 'sessioncluster.functions',
    'ReduceFunction': 'sessioncluster.functions',
    'RuntimeContext': 'sessioncluster.functions',
    'WindowFunction': 'sessioncluster.functions',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
