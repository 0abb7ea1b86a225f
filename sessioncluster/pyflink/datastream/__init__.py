"""``pyflink.datastream``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregateFunction': 'sessioncluster.api.functions',
    'AllWindowFunction': 'sessioncluster.api.functions',
    'AllWindowedStream': 'sessioncluster.client.datastream',
    'CheckpointConfig': 'sessioncluster.api.checkpoint_config',
    'CheckpointingMode': 'sessioncluster.api.checkpoint_config',
    'CoFlatMapFunction': 'sessioncluster.api.functions',
    'CoMapFunction': 'sessioncluster.api.functions',
    'CoProcessFunction': 'sessioncluster.api.functions',
    'ConnectedStreams': 'sessioncluster.client.datastream',
    'CountWindow': 'sessioncluster.api.window',
    'DataStream': 'sessioncluster.client.datastream',
    'FilterFunction': 'sessioncluster.api.functions',
    'FlatMapFunction': 'sessioncluster.api.functions',
    'Function': 'sessioncluster.api.functions',
    'KeySelector': 'sessioncluster.api.functions',
    'KeyedCoProcessFunction': 'sessioncluster.api.functions',
    'KeyedProcessFunction': 'sessioncluster.api.functions',
    'KeyedStream': 'sessioncluster.client.datastream',
    'MapFunction': 'sessioncluster.api.functions',
    'MergingWindowAssigner': 'sessioncluster.api.window',
    'OutputTag': 'sessioncluster.api.functions',
    'Partitioner': 'sessioncluster.api.functions',
    'ProcessAllWindowFunction': 'sessioncluster.api.functions',
    'ProcessFunction': 'sessioncluster.api.functions',
    'ProcessWindowFunction': 'sessioncluster.api.functions',
    'ReduceFunction': 'sessioncluster.api.functions',
    'RuntimeContext': 'sessioncluster.api.functions',
    'RuntimeExecutionMode': 'sessioncluster.common.execution_mode',
    'StreamExecutionEnvironment': 'sessioncluster.client.environment',
    'TimeCharacteristic': 'sessioncluster.pyflink.datastream.time_characteristic',
    'TimeDomain': 'sessioncluster.api.functions',
    'TimeWindow': 'sessioncluster.api.window',
    'TimerService': 'sessioncluster.api.functions',
    'Trigger': 'sessioncluster.api.window',
    'TriggerResult': 'sessioncluster.api.window',
    'Window': 'sessioncluster.api.window',
    'WindowAssigner': 'sessioncluster.api.window',
    'WindowFunction': 'sessioncluster.api.functions',
    'WindowedStream': 'sessioncluster.client.datastream',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
