"""``pyflink.common.watermark_strategy``."""

from .._exports import lazy_exports

_NAMES = {
    'TimestampAssigner': 'sessioncluster.api.watermark',
    'WatermarkStrategy': 'sessioncluster.api.watermark',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
