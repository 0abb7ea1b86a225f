"""``pyflink.table.expression``."""

from .._exports import lazy_exports

_NAMES = {
    'Expression': 'sessioncluster.api.table.expression',
    'JsonExistsOnError': 'sessioncluster.api.table.jsonexpressions',
    'JsonOnNull': 'sessioncluster.api.table.jsonexpressions',
    'JsonQueryOnEmptyOrError': 'sessioncluster.api.table.jsonexpressions',
    'JsonQueryWrapper': 'sessioncluster.api.table.jsonexpressions',
    'JsonType': 'sessioncluster.api.table.jsonexpressions',
    'JsonValueOnEmptyOrError': 'sessioncluster.api.table.jsonexpressions',
    'TimeIntervalUnit': 'sessioncluster.api.table.units',
    'TimePointUnit': 'sessioncluster.api.table.units',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
