"""``pyflink.datastream.connectors``."""

from ..._exports import lazy_exports

_NAMES = {
    'BucketAssigner': 'sessioncluster.connectors.file_system',
    'FileSink': 'sessioncluster.connectors.file_system',
    'FileSource': 'sessioncluster.connectors.file_system',
    'FileSourceBuilder': 'sessioncluster.connectors.file_system',
    'NumberSequenceSource': 'sessioncluster.connectors.number_seq',
    'OutputFileConfig': 'sessioncluster.connectors.file_system',
    'RollingPolicy': 'sessioncluster.connectors.file_system',
    'StreamFormat': 'sessioncluster.connectors.file_system',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
