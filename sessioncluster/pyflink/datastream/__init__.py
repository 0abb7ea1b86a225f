"""``pyflink.datastream``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregateFunction': 'sessioncluster.functions',
    'AllWindowFunction': 'sessioncluster.functions',
    'AllWindowedStream': 'sessioncluster.client.environment',
    'CheckpointConfig': 'sessioncluster.checkpoint_config',
    'CheckpointingMode': 'sessioncluster.checkpoint_config',
    'CoFlatMapFunction': 'sessioncluster.functions',
    'CoMapFunction': 'sessioncluster.functions',
    'CoProcessFunction': 'sessioncluster.functions',
    'ConnectedStreams': 'sessioncluster.client.environment',
    'CountWindow': 'sessioncluster.window',
    'DataStream': 'sessioncluster.client.environment',
    'FilterFunction': 'sessioncluster.functions',
    'FlatMapFunction': 'sessioncluster.functions',
    'Function': 'sessioncluster.functions',
    'KeySelector': 'sessioncluster.functions',
    'KeyedCoProcessFunction': 'sessioncluster.functions',
    'KeyedProcessFunction': 'sessioncluster.functions',
    'KeyedStream': 'sessioncluster.client.environment',
    'MapFunction': 'sessioncluster.functions',
    'MergingWindowAssigner': 'sessioncluster.window',
    'OutputTag': 'sessioncluster.functions',
    'ProcessAllWindowFunction': 'sessioncluster.functions',
    'ProcessFunction': 'sessioncluster.functions',
    'ProcessWindowFunction': 'sessioncluster.functions',
    'ReduceFunction': 'sessioncluster.functions',
    'RuntimeContext': 'sessioncluster.functions',
    'RuntimeExecutionMode': 'sessioncluster.common.execution_mode',
    'StreamExecutionEnvironment': 'sessioncluster.client.environment',
    'TimeCharacteristic': 'sessioncluster.pyflink.datastream.time_characteristic',
    'TimeDomain': 'sessioncluster.functions',
    'TimeWindow': 'sessioncluster.window',
    'TimerService': 'sessioncluster.functions',
    'Trigger': 'sessioncluster.window',
    'TriggerResult': 'sessioncluster.window',
    'Window': 'sessioncluster.window',
    'WindowAssigner': 'sessioncluster.window',
    'WindowFunction': 'sessioncluster.functions',
    'WindowedStream': 'sessioncluster.client.environment',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
