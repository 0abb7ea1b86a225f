"""``pyflink.table.types``."""

from .._exports import lazy_exports

_NAMES = {
    'ArrayType': 'sessioncluster.api.table.types',
    'AtomicType': 'sessioncluster.api.table.types',
    'BigIntType': 'sessioncluster.api.table.types',
    'BinaryType': 'sessioncluster.api.table.types',
    'BooleanType': 'sessioncluster.api.table.types',
    'CharType': 'sessioncluster.api.table.types',
    'DataType': 'sessioncluster.api.table.types',
    'DataTypes': 'sessioncluster.api.table.types',
    'DateType': 'sessioncluster.api.table.types',
    'DayTimeIntervalType': 'sessioncluster.api.table.intervaltypes',
    'DecimalType': 'sessioncluster.api.table.types',
    'DoubleType': 'sessioncluster.api.table.types',
    'FloatType': 'sessioncluster.api.table.types',
    'FractionalType': 'sessioncluster.api.table.types',
    'IntType': 'sessioncluster.api.table.types',
    'IntegralType': 'sessioncluster.api.table.types',
    'ListViewType': 'sessioncluster.api.table.types',
    'LocalZonedTimestampType': 'sessioncluster.api.table.types',
    'MapType': 'sessioncluster.api.table.types',
    'MapViewType': 'sessioncluster.api.table.types',
    'MultisetType': 'sessioncluster.api.table.types',
    'NullType': 'sessioncluster.api.table.types',
    'NumericType': 'sessioncluster.api.table.types',
    'Resolution': 'sessioncluster.api.table.intervaltypes',
    'Row': 'sessioncluster.common.types',
    'RowField': 'sessioncluster.api.table.types',
    'RowKind': 'sessioncluster.common.types',
    'RowType': 'sessioncluster.api.table.types',
    'SmallIntType': 'sessioncluster.api.table.types',
    'TimeType': 'sessioncluster.api.table.types',
    'TimestampType': 'sessioncluster.api.table.types',
    'TinyIntType': 'sessioncluster.api.table.types',
    'VarBinaryType': 'sessioncluster.api.table.types',
    'VarCharType': 'sessioncluster.api.table.types',
    'YearMonthIntervalType': 'sessioncluster.api.table.intervaltypes',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
