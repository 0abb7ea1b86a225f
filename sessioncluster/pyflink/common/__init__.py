"""``pyflink.common``."""

from .._exports import lazy_exports

_NAMES = {
    'ByteArraySchema': 'sessioncluster.common.serialization',
    'Configuration': 'sessioncluster.common.configuration',
    'DeserializationSchema': 'sessioncluster.common.serialization',
    'Duration': 'sessioncluster.common.time',
    'Encoder': 'sessioncluster.common.serialization',
    'ExecutionConfig': 'sessioncluster.common.execution_config',
    'InputDependencyConstraint': 'sessioncluster.common.execution_config',
    'Instant': 'sessioncluster.common.time',
    'JobClient': 'sessioncluster.client.jobclient',
    'JobExecutionResult': 'sessioncluster.client.jobclient',
    'JobStatus': 'sessioncluster.graph.lifecycle',
    'RestartStrategies': 'sessioncluster.api.restart',
    'RestartStrategyConfiguration': 'sessioncluster.api.restart',
    'Row': 'sessioncluster.common.types',
    'RowKind': 'sessioncluster.common.types',
    'SerializationSchema': 'sessioncluster.common.serialization',
    'SimpleStringSchema': 'sessioncluster.common.serialization',
    'Time': 'sessioncluster.common.time',
    'TimestampAssigner': 'sessioncluster.api.watermark',
    'TypeInformation': 'sessioncluster.common.typeinfo',
    'Types': 'sessioncluster.common.typeinfo',
    'WatermarkStrategy': 'sessioncluster.api.watermark',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
