"""``pyflink.datastream.formats.orc``."""

from ..._exports import lazy_exports

_NAMES = {
    'OrcBulkWriters': 'sessioncluster.api.formats.orc',
    'OrcColumnarRowInputFormat': 'sessioncluster.api.formats.orc',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
