"""``pyflink.table.udf``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregateFunction': 'sessioncluster.api.table.udf',
    'AsyncScalarFunction': 'sessioncluster.api.table.udf',
    'FunctionContext': 'sessioncluster.api.table.udf',
    'ScalarFunction': 'sessioncluster.api.table.udf',
    'TableAggregateFunction': 'sessioncluster.api.table.udf',
    'TableFunction': 'sessioncluster.api.table.udf',
    'UserDefinedAggregateFunctionWrapper': 'sessioncluster.api.table.udf',
    'UserDefinedAsyncScalarFunctionWrapper': 'sessioncluster.api.table.udf',
    'UserDefinedFunction': 'sessioncluster.api.table.udf',
    'UserDefinedFunctionWrapper': 'sessioncluster.api.table.udf',
    'UserDefinedScalarFunctionWrapper': 'sessioncluster.api.table.udf',
    'UserDefinedTableFunctionWrapper': 'sessioncluster.api.table.udf',
    'udaf': 'sessioncluster.api.table.udf',
    'udf': 'sessioncluster.api.table.udf',
    'udtaf': 'sessioncluster.api.table.udf',
    'udtf': 'sessioncluster.api.table.udf',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
