"""``pyflink.table.window``."""

from .._exports import lazy_exports

_NAMES = {
    'GroupWindow': 'sessioncluster.api.table.window',
    'Over': 'sessioncluster.api.table.window',
    'OverWindow': 'sessioncluster.api.table.window',
    'Session': 'sessioncluster.api.table.window',
    'SessionWithGapOnTimeWithAlias': 'sessioncluster.api.table.window',
    'Slide': 'sessioncluster.api.table.window',
    'SlideWithSizeAndSlideOnTimeWithAlias': 'sessioncluster.api.table.window',
    'Tumble': 'sessioncluster.api.table.window',
    'TumbleWithSizeOnTimeWithAlias': 'sessioncluster.api.table.window',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
