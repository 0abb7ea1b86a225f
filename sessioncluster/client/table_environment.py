"""PyFlink's ``TableEnvironment.create(...)`` and ``StreamTableEnvironment.create(env)`` on the
session cluster: the Table API of ``api/table`` bound to the current session (as
``StreamExecutionEnvironment.get_execution_environment()`` is, see ``client/current.py``).

>>> t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())   # doctest: +SKIP
>>> t_env.from_elements([(1, 'a')], ['id', 'data']).execute().print()      # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from typing import Any

from ..api.functions import ProcessFunction
from ..api.table import conversion
from ..api.table import environment as table_env
from ..api.table.descriptor import Schema
from ..api.table.table import Table
from ..common.configuration import Configuration
from ..common.execution_mode import RuntimeExecutionMode
from ..common.types import RowKind
from .current import current_or_connect, own_catalogs
from .session import Session


class TableEnvironment(table_env.TableEnvironment):
    """A TableEnvironment on a session cluster (the current one unless given)."""

    @staticmethod
    def create(environment_settings: Any = None, session: Any = None) -> "TableEnvironment":
        """A TableEnvironment on ``session`` (default: the current session), in the runtime mode
        of ``environment_settings`` (EnvironmentSettings or a Configuration; STREAMING by
        default, as Flink's)."""
        settings = _settings(environment_settings)
        env = TableEnvironment(_gateway(session if session is not None else current_or_connect()),
                               settings)
        _own_catalog(env)
        return env


class StreamTableEnvironment(TableEnvironment):
    """A TableEnvironment made from a StreamExecutionEnvironment: same session, same mode."""

    #: the StreamExecutionEnvironment this was made from
    stream_execution_environment: Any = None

    @staticmethod
    def create(stream_execution_environment: Any = None,  # type: ignore[override]
               environment_settings: Any = None) -> "StreamTableEnvironment":
        """A StreamTableEnvironment on the stream environment's session, in its runtime mode
        (unless ``environment_settings`` say otherwise)."""
        if stream_execution_environment is None:
            from .environment import StreamExecutionEnvironment
            stream_execution_environment = StreamExecutionEnvironment.get_execution_environment()
        if environment_settings is None:
            mode = stream_execution_environment.get_runtime_mode()
            builder = table_env.EnvironmentSettings.new_instance()
            builder = (builder.in_batch_mode() if mode is RuntimeExecutionMode.BATCH
                       else builder.in_streaming_mode())
            environment_settings = builder.build()
        env = StreamTableEnvironment(_gateway(stream_execution_environment.session),
                                     _settings(environment_settings))
        env.stream_execution_environment = stream_execution_environment
        _own_catalog(env)
        parallelism = getattr(stream_execution_environment, "get_parallelism", lambda: None)()
        if isinstance(parallelism, int) and parallelism > 0:
            # the stream environment's parallelism is the table jobs' default, as in Flink
            env.get_config().set("parallelism.default", str(parallelism))
        return env

    def from_data_stream(self, data_stream: Any, *fields_or_schema: Any) -> Any:
        """A Table of a bounded DataStream's records (PyFlink's ``from_data_stream``): the
        stream runs as a job of its own and its records become a temporary view of the
        session, read by the Table's queries in BATCH and STREAMING; columns as Flink derives
        them (a named Row's names, ``f0``, ``f1``... else), or as ``fields_or_schema`` say."""
        _check_bounded(data_stream, "from_data_stream()")
        schema = fields_or_schema[0] if len(fields_or_schema) == 1 and isinstance(
            fields_or_schema[0], Schema) else None
        rowtime = conversion.rowtime_column(schema)
        if rowtime is not None:  # each record with its timestamp: the rowtime column's value
            pairs = list(data_stream.process(_WithTimestamp()).execute_and_collect("from_data_stream"))
            records = [record for record, _ in pairs]
            times = [conversion.rowtime_value(ts) for _, ts in pairs]
        else:
            records = list(data_stream.execute_and_collect("from_data_stream"))
        if not records and schema is not None:
            names = [n for n, _ in schema.physical_columns()]
        else:
            names = conversion.stream_column_names(records)
        rows = conversion.stream_rows(records, names)
        if rowtime is not None:
            rows, names = [(*r, t) for r, t in zip(rows, times)], [*names, rowtime]
        table = self.from_elements(rows, names)
        select = conversion.projection(names, fields_or_schema)
        return table if select is None else self.sql_query(
            f"SELECT {', '.join(select)} FROM ({table.query_sql})")

    def create_temporary_view(self, view_path: str, table: Any, *fields: Any) -> None:
        """Register a Table, or a DataStream (through :meth:`from_data_stream`), as the
        temporary view ``view_path``."""
        if not isinstance(table, Table):
            table, fields = self.from_data_stream(table, *fields), ()
        super().create_temporary_view(view_path, table, *fields)

    def to_data_stream(self, table: Any, *target: Any) -> Any:
        """An insert-only Table's rows as a DataStream of named Rows (PyFlink's
        ``to_data_stream``): the Table runs as a job, its rows become a bounded collection
        source of this environment. An updating Table fails as in Flink."""
        rows, names = self._table_rows(table)
        conversion.insert_only(rows)
        return self._stream_environment().from_collection(
            conversion.as_records(rows, names, changelog=False))

    def to_changelog_stream(self, table: Any, *target: Any) -> Any:
        """A Table's changelog as a DataStream of Rows with their RowKind (``+I``, ``-U``,
        ``+U``, ``-D``), as PyFlink's ``to_changelog_stream``."""
        rows, names = self._table_rows(table)
        return self._stream_environment().from_collection(
            conversion.as_records(rows, names, changelog=True))

    def _table_rows(self, table: Any) -> tuple[list[Any], list[str]]:
        result = table.execute()
        rows = list(result.collect())
        return rows, result.get_table_schema().get_field_names()

    def _stream_environment(self) -> Any:
        if self.stream_execution_environment is None:
            raise RuntimeError("to_data_stream() needs the StreamTableEnvironment of a "
                               "StreamExecutionEnvironment: StreamTableEnvironment.create(env)")
        return self.stream_execution_environment

    def to_append_stream(self, table: Any, type_info: Any) -> Any:
        """Deprecated in PyFlink: :meth:`to_data_stream`."""
        return self.to_data_stream(table)

    def to_retract_stream(self, table: Any, type_info: Any) -> Any:
        """Deprecated in PyFlink: ``(True, row)`` for an insertion or update after, ``(False,
        row)`` for a retraction."""
        changes = self.to_changelog_stream(table)
        return changes.map(lambda r: (r.get_row_kind() in (RowKind.INSERT,
                                                           RowKind.UPDATE_AFTER), r))


def _check_bounded(data_stream: Any, what: str) -> None:
    """Fail for a DataStream with an unbounded source (its records are read to their end)."""
    graph = data_stream.env.stream_graph
    nodes = [data_stream.node, *graph.upstream_of(data_stream.node)]
    unbounded = sorted({n.name for n in nodes if n.config.get("unbounded")})
    if unbounded:
        raise NotImplementedError(
            f"{what} of an unbounded DataStream (source {', '.join(unbounded)}) is not "
            "supported by sessioncluster yet: the stream's records are read to their end into "
            "a table, which needs bounded sources")


def _own_catalog(env: table_env.TableEnvironment) -> None:
    """Under ``sessioncluster run``, a catalog of the environment's own (as each Flink
    TableEnvironment has); else the session's shared one."""
    if own_catalogs():
        env.get_config().set(table_env.CATALOG_SCOPE, uuid.uuid4().hex)


class _WithTimestamp(ProcessFunction):
    """Each record with its timestamp (epoch milliseconds, None without one)."""

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        yield value, ctx.timestamp()


def _gateway(session: Session) -> table_env.FlinkSqlGateway:
    """The session as the TableEnvironment's gateway (``Session.execute_flink_sql``)."""
    return session


def _settings(settings: Any) -> table_env.EnvironmentSettings:
    if settings is None:
        return table_env.EnvironmentSettings.in_streaming_mode()
    if isinstance(settings, table_env.EnvironmentSettings):
        return settings
    if isinstance(settings, Configuration):
        return table_env.EnvironmentSettings.new_instance().with_configuration(settings).build()
    raise TypeError(f"TableEnvironment.create takes EnvironmentSettings or a Configuration, not "
                    f"{settings!r}")
