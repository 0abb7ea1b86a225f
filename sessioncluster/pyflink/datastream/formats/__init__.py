"""``pyflink.datastream.formats``."""

from ..._exports import lazy_exports

_NAMES: dict[str, str] = {}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
