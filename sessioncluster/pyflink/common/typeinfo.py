"""``pyflink.common.typeinfo``."""

from .._exports import lazy_exports

_NAMES = {
    'BasicArrayTypeInfo': 'sessioncluster.common.typeinfo',
    'BasicTypeInfo': 'sessioncluster.common.typeinfo',
    'InstantTypeInfo': 'sessioncluster.common.typeinfo',
    'ListTypeInfo': 'sessioncluster.common.typeinfo',
    'MapTypeInfo': 'sessioncluster.common.typeinfo',
    'ObjectArrayTypeInfo': 'sessioncluster.common.typeinfo',
    'PickledBytesTypeInfo': 'sessioncluster.common.typeinfo',
    'PrimitiveArrayTypeInfo': 'sessioncluster.common.typeinfo',
    'RowTypeInfo': 'sessioncluster.common.typeinfo',
    'SqlTimeTypeInfo': 'sessioncluster.common.typeinfo',
    'TupleTypeInfo': 'sessioncluster.common.typeinfo',
    'TypeInformation': 'sessioncluster.common.typeinfo',
    'Types': 'sessioncluster.common.typeinfo',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
