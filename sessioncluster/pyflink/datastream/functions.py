"""``pyflink.datastream.functions``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregateFunction': 'sessioncluster.api.functions',
    'AllWindowFunction': 'sessioncluster.api.functions',
    'AsyncFunction': 'sessioncluster.api.async_io',
    'AsyncRetryPredicate': 'sessioncluster.api.async_io',
    'AsyncRetryStrategy': 'sessioncluster.api.async_io',
    'CoFlatMapFunction': 'sessioncluster.api.functions',
    'CoMapFunction': 'sessioncluster.api.functions',
    'CoProcessFunction': 'sessioncluster.api.functions',
    'FilterFunction': 'sessioncluster.api.functions',
    'FlatMapFunction': 'sessioncluster.api.functions',
    'Function': 'sessioncluster.api.functions',
    'KeySelector': 'sessioncluster.api.functions',
    'KeyedCoProcessFunction': 'sessioncluster.api.functions',
    'KeyedProcessFunction': 'sessioncluster.api.functions',
    'MapFunction': 'sessioncluster.api.functions',
    'Partitioner': 'sessioncluster.api.functions',
    'ProcessAllWindowFunction': 'sessioncluster.api.functions',
    'ProcessFunction': 'sessioncluster.api.functions',
    'ProcessWindowFunction': 'sessioncluster.api.functions',
    'ReduceFunction': 'sessioncluster.api.functions',
    'RuntimeContext': 'sessioncluster.api.functions',
    'TimerService': 'sessioncluster.api.functions',
    'WindowFunction': 'sessioncluster.api.functions',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
