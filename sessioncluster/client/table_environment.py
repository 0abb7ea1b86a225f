"""PyFlink's ``TableEnvironment.create(...)`` and ``StreamTableEnvironment.create(env)`` on the
session cluster: the Table API of ``api/table`` bound to the current session (as
``StreamExecutionEnvironment.get_execution_environment()`` is, see ``client/current.py``).

>>> t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())   # doctest: +SKIP
>>> t_env.from_elements([(1, 'a')], ['id', 'data']).execute().print()      # doctest: +SKIP
"""

from __future__ import annotations

import pickle
import uuid
from typing import Any, Callable

from ..api.functions import MapFunction, ProcessFunction
from ..api.table import changelog_mode as changelog
from ..api.table import conversion
from ..api.table import environment as table_env
from ..api.table.changelog_mode import CHANGELOG_VIEW_PREFIX, ChangelogMode
from ..api.table.descriptor import Schema
from ..api.table.sqltext import quote_identifier
from ..api.table.table import Table, unnamed_view_name
from ..common.configuration import Configuration
from ..common.execution_mode import RuntimeExecutionMode
from ..common.typeinfo import Types
from ..common.types import RowKind
from ..graph.streamgraph import OperatorKind
from ..protocol.messages import SubmitJob
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
        them (a named Row's names, ``f0``, ``f1``... else), or as ``fields_or_schema`` say.

        An unbounded DataStream in STREAMING mode is a table whose queries run it: the
        DataStream's operators and the query are one streaming job of the session, its
        records flowing into the query as they come (:meth:`_from_unbounded`)."""
        schema = fields_or_schema[0] if len(fields_or_schema) == 1 and isinstance(
            fields_or_schema[0], Schema) else None
        if _unbounded_sources(data_stream) and self.runtime_mode() is RuntimeExecutionMode.STREAMING:
            return self._from_unbounded(data_stream, schema, fields_or_schema)
        _check_bounded(data_stream, "from_data_stream()")
        return self._bounded_table(data_stream, schema, fields_or_schema)

    def _bounded_table(self, data_stream: Any, schema: Schema | None,
                       fields_or_schema: tuple[Any, ...],
                       check: Callable[[list[Any]], None] | None = None) -> Any:
        """A bounded DataStream's records (``check``-ed first) as a Table."""
        rowtime = conversion.rowtime_column(schema)
        if rowtime is not None:  # each record with its timestamp: the rowtime column's value
            pairs = list(data_stream.process(_WithTimestamp()).execute_and_collect("from_data_stream"))
            records = [record for record, _ in pairs]
            times = [conversion.rowtime_value(ts) for _, ts in pairs]
        else:
            records = list(data_stream.execute_and_collect("from_data_stream"))
        if check is not None:
            check(records)
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

    def _from_unbounded(self, data_stream: Any, schema: Schema | None,
                        fields_or_schema: tuple[Any, ...], changelog: str = "") -> Table:
        """A temporary table of the ``datastream`` connector, its JobGraph sent with its
        CREATE TABLE: the columns of the Schema or of the stream's output type, the records'
        timestamps as the Schema's rowtime, ``SOURCE_WATERMARK()`` the stream's watermark;
        ``changelog`` (``conversion.CHANGELOG_ALL``/``CHANGELOG_UPSERT``): the records'
        RowKinds are the table's changelog (its name says so, as a bounded changelog
        table's)."""
        rowtime = conversion.rowtime_column(schema)
        rowtime_type = next((t for n, t, _ in schema.metadata_columns() if n == rowtime),
                            None) if schema is not None and rowtime is not None else None
        columns = conversion.unbounded_columns(schema, output_type(data_stream))
        watermark = conversion.unbounded_watermark(schema, rowtime,
                                                   _watermark_delay(data_stream))
        name = f"{CHANGELOG_VIEW_PREFIX}{uuid.uuid4().hex[:12]}" if changelog \
            else unnamed_view_name()
        graph, blobs = data_stream.collect_job_graph(f"from_data_stream {name}")
        payload = pickle.dumps(SubmitJob(graph, blobs, uuid.uuid4().hex), protocol=5)
        statement = conversion.datastream_table_sql(
            name, columns, (rowtime, rowtime_type or "TIMESTAMP_LTZ(3)") if rowtime else None,
            watermark, changelog)
        self.stream_execution_environment.session.execute_sql(
            statement, "flink", self.runtime_mode(), self.get_config().to_dict(),
            function=payload)
        table = self.from_path(name)
        names = [n for n, _ in columns] + ([rowtime] if rowtime else [])
        if changelog:  # its columns (typed by its DDL), not the RowKind and positions
            items = [quote_identifier(n) for n in names] + (
                schema.computed_columns() if schema is not None else [])
            return self.sql_query(f"SELECT {', '.join(items)} FROM {quote_identifier(name)}")
        if schema is not None:
            computed = schema.computed_columns()
            return table if not computed else self.sql_query(
                f"SELECT *, {', '.join(computed)} FROM ({table.query_sql})")
        select = conversion.projection(names, fields_or_schema)
        return table if select is None else self.sql_query(
            f"SELECT {', '.join(select)} FROM ({table.query_sql})")

    def from_changelog_stream(self, data_stream: Any, schema: Schema | None = None,
                              changelog_mode: ChangelogMode | None = None) -> Any:
        """A Table of a bounded DataStream's Rows with their RowKind (PyFlink's
        ``from_changelog_stream``; ``changelog_mode`` all kinds by default, an upsert mode
        needs the Schema's primary key). The records are the table's changelog: in STREAMING
        its queries apply them (an aggregation retracts ``-U``/``-D``); in BATCH only an
        insert-only changelog is a table, as in Flink. An unbounded DataStream in STREAMING
        is a table whose queries run it (:meth:`_unbounded_changelog`)."""
        mode = changelog_mode if changelog_mode is not None else ChangelogMode.all()
        streaming = self.runtime_mode() is RuntimeExecutionMode.STREAMING
        if _unbounded_sources(data_stream) and streaming:
            return self._unbounded_changelog(data_stream, schema, mode)
        _check_bounded(data_stream, "from_changelog_stream()")
        key = list(schema.key_columns) if schema is not None else []
        if mode.is_upsert() and not key:
            raise ValueError(changelog.upsert_refusal(changelog.DATASTREAM_SOURCE))
        if not streaming and not mode.contains_only_inserts():
            raise ValueError(changelog.batch_refusal(changelog.DATASTREAM_SOURCE))
        if mode.contains_only_inserts():
            return self._bounded_table(data_stream, schema, (schema,) if schema else (),
                                       changelog.check_insert_only)
        records = list(data_stream.execute_and_collect("from_changelog_stream"))
        names = [n for n, _ in schema.physical_columns()] if schema is not None else []
        type_info = output_type(data_stream)
        names = names or ([n for n, _ in conversion.type_columns(type_info)] if type_info
                          is not None else conversion.stream_column_names(records))
        rows = changelog.changelog_records(records, mode, [names.index(k) for k in key])
        return self._changelog_table(rows, names, schema, type_info)

    def _unbounded_changelog(self, data_stream: Any, schema: Schema | None,
                             mode: ChangelogMode) -> Table:
        """The changelog of an unbounded DataStream as a ``datastream`` table
        (:meth:`_from_unbounded`) whose records keep their RowKind: an insert-only one's
        records checked as Flink's input conversion does, an upsert one's normalized on its
        primary key first (:class:`~..api.table.changelog_mode.UpsertNormalize`)."""
        key = list(schema.key_columns) if schema is not None else []
        if mode.is_upsert() and not key:
            raise ValueError(changelog.upsert_refusal(changelog.DATASTREAM_SOURCE))
        if mode.contains_only_inserts():
            return self._from_unbounded(data_stream.map(_InsertOnly(), output_type(data_stream)),
                                        schema, (schema,) if schema else ())
        if mode.is_upsert():
            type_info = output_type(data_stream)
            names = [n for n, _ in conversion.unbounded_columns(schema, type_info)]
            positions = [names.index(k) for k in key]
            # numbered before the normalize regroups them by key: the table's positions are
            # the arrival order (each record's -U/+U sub-positions 0/1), as Flink's p=1 order;
            # the declared type stays the user's (the records carry two more fields)
            data_stream = data_stream.map(changelog.NumberRecords(), Types.PICKLED_BYTE_ARRAY()) \
                .key_by(changelog.UpsertKey(positions, numbered=True)).process(
                    changelog.UpsertNormalize(positions, numbered=True), type_info)
        return self._from_unbounded(data_stream, schema, (schema,) if schema else (),
                                    changelog=conversion.CHANGELOG_UPSERT if mode.is_upsert()
                                    else conversion.CHANGELOG_ALL)

    def _changelog_table(self, rows: list[Any], names: list[str], schema: Schema | None,
                         type_info: Any) -> Table:
        """The changelog's rows as a temporary view with their positions and RowKinds
        (:mod:`~sessioncluster.api.table.changelog_mode`), read by the Table's queries."""
        import pandas as pd
        import pyarrow as pa

        hidden = [changelog.SEQ_COLUMN, changelog.SUB_COLUMN, changelog.ROW_KIND_COLUMN]
        values = changelog.positioned(rows)
        columns = [pa.array([v[i] for v in values]) for i in range(len(names) + 3)]
        name = f"{changelog.CHANGELOG_VIEW_PREFIX}{uuid.uuid4().hex[:12]}"
        frame = pa.Table.from_arrays(columns, names=[*names, *hidden])
        self.gateway.create_temporary_view(name, frame.to_pandas(types_mapper=pd.ArrowDtype))
        if schema is not None:
            select = conversion.projection(names, (schema,)) or []
        else:
            typed = dict(conversion.type_columns(type_info)) if type_info is not None else {}
            select = [f"CAST({quote_identifier(n)} AS {typed[n]}) AS {quote_identifier(n)}"
                      if n in typed else quote_identifier(n) for n in names]
        return self.sql_query(f"SELECT {', '.join(select)} FROM {quote_identifier(name)}")

    def create_temporary_view(self, view_path: str, table: Any, *fields: Any) -> None:
        """Register a Table, or a DataStream (through :meth:`from_data_stream`), as the
        temporary view ``view_path``."""
        if not isinstance(table, Table):
            table, fields = self.from_data_stream(table, *fields), ()
        super().create_temporary_view(view_path, table, *fields)

    def to_data_stream(self, table: Any, *target: Any) -> Any:
        """An insert-only Table's rows as a DataStream of named Rows (PyFlink's
        ``to_data_stream``). A bounded Table runs as a job and its rows become a bounded
        collection source of this environment; an unbounded one in STREAMING is the source of
        the DataStream's job, its query and the DataStream's operators one streaming job
        (:meth:`_from_unbounded_table`). An updating Table fails as in Flink. The records
        carry the Table's rowtime as their timestamps (a window TVF's ``window_time``)."""
        stream, rowtime = self._from_unbounded_table(table, "data")
        if stream is not None:
            return stream
        rows, names = self._table_rows(table)
        conversion.insert_only(rows)
        return self._bounded_stream(conversion.as_records(rows, names, changelog=False),
                                    names, rowtime)

    def to_changelog_stream(self, table: Any, target_schema: Schema | None = None,
                            changelog_mode: ChangelogMode | None = None) -> Any:
        """A Table's changelog as a DataStream of Rows with their RowKind (``+I``, ``-U``,
        ``+U``, ``-D``), as PyFlink's ``to_changelog_stream``; an unbounded Table's as its
        query produces it (:meth:`_from_unbounded_table`). ``changelog_mode``: all kinds by
        default; an upsert mode leaves the ``-U`` records out, an insert-only one refuses an
        updating Table (as :meth:`to_data_stream`)."""
        if changelog_mode is not None and changelog_mode.contains_only_inserts():
            return self.to_data_stream(table)
        stream, rowtime = self._from_unbounded_table(table, "changelog")
        if stream is None:
            rows, names = self._table_rows(table)
            stream = self._bounded_stream(conversion.as_records(rows, names, changelog=True),
                                          names, rowtime)
        if changelog_mode is not None and changelog_mode.is_upsert():
            stream = stream.filter(lambda r: r.get_row_kind() is not RowKind.UPDATE_BEFORE)
        return stream

    def _bounded_stream(self, records: list[Any], names: list[str], rowtime: str) -> Any:
        """A bounded Table's records as a collection source, stamped with the ``rowtime``
        column's values when the Table has one."""
        stream = self._stream_environment().from_collection(records)
        if rowtime in names:
            stream = stream.assign_timestamps_and_watermarks(
                conversion.rowtime_strategy(names.index(rowtime)))
        return stream

    def _from_unbounded_table(self, table: Any, kind: str) -> tuple[Any, str]:
        """In STREAMING, the DataStream whose source is the unbounded ``table``'s query (a
        ``SOURCE_TABLE`` node carrying the query and this environment's configuration, planned
        on the JobManager when the DataStream's job runs); its records are stamped with the
        Table's rowtime. None for a bounded Table (or in BATCH). The JobManager plans the
        query first (nothing runs): an updating query fails here for ``to_data_stream``.
        With it, the Table's rowtime column ("" for none)."""
        self._stream_environment()
        configuration = self.get_config().to_dict()
        self.get_config().set(conversion.TO_DATASTREAM, kind)
        try:
            probe = self.execute_sql(table.query_sql).collect()
            bounded, _, rowtime = tuple(next(iter(probe)))
        finally:
            self.get_config().get_configuration().remove_config(conversion.TO_DATASTREAM)
        if bounded or self.runtime_mode() is not RuntimeExecutionMode.STREAMING:
            return None, str(rowtime or "")
        from .datastream import DataStream

        env = self._stream_environment()
        # the Table's Python functions run in the DataStream's job: with its Python files...
        env.add_python_dependencies(env.session.packed_dependencies(configuration))

        node = env.stream_graph.add_node(OperatorKind.SOURCE_TABLE)
        node.config.update({"unbounded": True, conversion.TABLE_QUERY: table.query_sql,
                            conversion.TABLE_CONFIGURATION: configuration,
                            conversion.TABLE_CONVERSION: kind,
                            conversion.TABLE_ROWTIME: rowtime or ""})
        if rowtime:
            node.config["timestamped"] = True  # the Table's rowtime is the record's timestamp
        return DataStream(env, node), str(rowtime or "")

    def _table_rows(self, table: Any) -> tuple[list[Any], list[str]]:
        result = table.execute()
        if result.is_unbounded():  # BATCH of an unbounded source: its rows never end
            client = result.get_job_client()
            if client is not None:
                client.cancel()
            raise NotImplementedError(
                "to_data_stream() / to_changelog_stream() of a Table over an unbounded source "
                "runs in STREAMING mode only: the Table's rows are read to their end into the "
                "DataStream's collection in BATCH")
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


class _InsertOnly(MapFunction):
    """Flink's input conversion of an insert-only changelog: a record of another kind fails."""

    def map(self, value: Any) -> Any:
        changelog.check_insert_only([value])
        return value


def _upstream_nodes(data_stream: Any) -> list[Any]:
    return [data_stream.node, *data_stream.env.stream_graph.upstream_of(data_stream.node)]


def _unbounded_sources(data_stream: Any) -> list[str]:
    """The names of the stream's sources that do not end (watched directories, sockets)."""
    return sorted({n.name for n in _upstream_nodes(data_stream) if n.config.get("unbounded")})


def _watermark_delay(data_stream: Any) -> int | None:
    """The bounded out-of-orderness (ms) of the stream's watermark strategy; None without."""
    delays = [n.config["watermark_delay_ms"] for n in _upstream_nodes(data_stream)
              if "watermark_delay_ms" in n.config]
    return max(delays) if delays else None


def output_type(data_stream: Any) -> Any:
    """The TypeInformation of the stream's records: declared (``output_type=``), kept by a
    filter or a timestamp assigner, or a source's (a line of text is a STRING, a number
    sequence's a LONG); None when unknown."""
    node, declared = data_stream.node, data_stream.env.output_types
    while node is not None:
        if node.node_id in declared:
            return declared[node.node_id]
        if node.kind is OperatorKind.SOURCE_TEXT_FILE:
            fmt = node.function
            produced = fmt.produced_type() if hasattr(fmt, "produced_type") else None
            if produced is not None or getattr(fmt, "kind", "text_line") != "text_line":
                return produced
            return Types.STRING()
        if node.kind is OperatorKind.SOURCE_STREAM:
            return {"socket": Types.STRING(), "sequence": Types.LONG(),
                    "rate": Types.LONG()}.get(node.config.get("format"))
        # a filter, a reduction (sum/min/max too) and a timestamp assigner keep the type
        keeps_type = node.kind in (OperatorKind.FILTER, OperatorKind.REDUCE) \
            or node.config.get("timestamped")
        node = node.inputs[0].source if keeps_type and len(node.inputs) == 1 else None
    return None


def _check_bounded(data_stream: Any, what: str) -> None:
    """Fail for a DataStream with an unbounded source (its records are read to their end)."""
    unbounded = _unbounded_sources(data_stream)
    if unbounded:
        raise NotImplementedError(
            f"{what} of an unbounded DataStream (source {', '.join(unbounded)}) is not "
            "supported by sessioncluster yet: the stream's records are read to their end into "
            "a table, which needs bounded sources (in BATCH mode; a StreamTableEnvironment in "
            "STREAMING mode runs the stream inside the table's queries)")


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
