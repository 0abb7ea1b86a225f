"""``pyflink.datastream.connectors.number_seq``."""

from ..._exports import lazy_exports

_NAMES = {
    'NumberSequenceSource': 'sessioncluster.api.connectors.number_seq',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
