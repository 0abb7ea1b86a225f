"""``pyflink.datastream.connectors.file_system``."""

from ..._exports import lazy_exports

_NAMES = {
    'BucketAssigner': 'sessioncluster.api.connectors.file_system',
    'BulkFormat': 'sessioncluster.api.connectors.file_system',
    'BulkWriterFactory': 'sessioncluster.common.serialization',
    'FileSink': 'sessioncluster.api.connectors.file_system',
    'FileSource': 'sessioncluster.api.connectors.file_system',
    'FileSourceBuilder': 'sessioncluster.api.connectors.file_system',
    'OutputFileConfig': 'sessioncluster.api.connectors.file_system',
    'RollingPolicy': 'sessioncluster.api.connectors.file_system',
    'StreamFormat': 'sessioncluster.api.connectors.file_system',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
