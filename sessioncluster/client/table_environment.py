"""PyFlink's ``TableEnvironment.create(...)`` and ``StreamTableEnvironment.create(env)`` on the
session cluster: the Table API of ``api/table`` bound to the current session (as
``StreamExecutionEnvironment.get_execution_environment()`` is, see ``client/current.py``).

>>> t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())   # doctest: +SKIP
>>> t_env.from_elements([(1, 'a')], ['id', 'data']).execute().print()      # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from typing import Any

from ..api.table import environment as table_env
from ..common.configuration import Configuration
from ..common.execution_mode import RuntimeExecutionMode
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
        raise NotImplementedError("from_data_stream() (DataStream to Table, issue 27 item 1) is "
                                  "not built yet")

    def to_data_stream(self, table: Any, *target: Any) -> Any:
        raise NotImplementedError("to_data_stream() (Table to DataStream, issue 27 item 1) is "
                                  "not built yet")

    def to_changelog_stream(self, table: Any, *target: Any) -> Any:
        raise NotImplementedError("to_changelog_stream() (issue 27 item 1) is not built yet")

    def to_append_stream(self, table: Any, type_info: Any) -> Any:
        raise NotImplementedError("to_append_stream() (issue 27 item 1) is not built yet")

    def to_retract_stream(self, table: Any, type_info: Any) -> Any:
        raise NotImplementedError("to_retract_stream() (issue 27 item 1) is not built yet")


def _own_catalog(env: table_env.TableEnvironment) -> None:
    """Under ``sessioncluster run``, a catalog of the environment's own (as each Flink
    TableEnvironment has); else the session's shared one."""
    if own_catalogs():
        env.get_config().set(table_env.CATALOG_SCOPE, uuid.uuid4().hex)


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
