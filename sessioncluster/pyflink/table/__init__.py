"""``pyflink.table``."""

from .._exports import lazy_exports

_NAMES = {
    'AggregateFunction': 'sessioncluster.api.table.udf',
    'AggregatedTable': 'sessioncluster.api.table.table',
    'AsyncScalarFunction': 'sessioncluster.api.table.udf',
    'ChangelogMode': 'sessioncluster.api.table.changelog_mode',
    'DataTypes': 'sessioncluster.api.table.types',
    'DataView': 'sessioncluster.api.table.dataview',
    'EnvironmentSettings': 'sessioncluster.api.table.environment',
    'ExplainDetail': 'sessioncluster.api.table.result',
    'Expression': 'sessioncluster.api.table.expression',
    'FormatDescriptor': 'sessioncluster.api.table.descriptor',
    'FunctionContext': 'sessioncluster.api.table.udf',
    'GroupWindowedTable': 'sessioncluster.api.table.table',
    'GroupedTable': 'sessioncluster.api.table.table',
    'ListView': 'sessioncluster.api.table.dataview',
    'MapView': 'sessioncluster.api.table.dataview',
    'ModuleEntry': 'sessioncluster.api.table.catalogobjects',
    'OverWindowedTable': 'sessioncluster.api.table.table',
    'ResultKind': 'sessioncluster.api.table.result',
    'Row': 'sessioncluster.common.types',
    'RowKind': 'sessioncluster.common.types',
    'ScalarFunction': 'sessioncluster.api.table.udf',
    'Schema': 'sessioncluster.api.table.descriptor',
    'SqlDialect': 'sessioncluster.api.table.catalogobjects',
    'StatementSet': 'sessioncluster.api.table.statement_set',
    'StreamTableEnvironment': 'sessioncluster.client.table_environment',
    'Table': 'sessioncluster.api.table.table',
    'TableAggregateFunction': 'sessioncluster.api.table.udf',
    'TableConfig': 'sessioncluster.api.table.environment',
    'TableDescriptor': 'sessioncluster.api.table.descriptor',
    'TableEnvironment': 'sessioncluster.client.table_environment',
    'TableFunction': 'sessioncluster.api.table.udf',
    'TablePipeline': 'sessioncluster.api.table.table_pipeline',
    'TableResult': 'sessioncluster.api.table.result',
    'TableSchema': 'sessioncluster.api.table.result',
    'WindowGroupedTable': 'sessioncluster.api.table.table',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
