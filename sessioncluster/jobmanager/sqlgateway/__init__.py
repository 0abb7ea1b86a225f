"""Flink's SQL Gateway REST endpoint (``/v1``, ``/v2``: sessions, statements, results by
token) on the session cluster's REST server: an HTTP client runs Flink SQL on the session as
it would on Flink's gateway, beside the session's notebooks.

- :mod:`.results`: an operation's status and its result fetched by token (pure);
- :mod:`.operation`: how an operation runs its statement through the Dispatcher;
- :mod:`.service`: the sessions;
- :mod:`.serde`: results as Flink's gateway writes them (pure).
"""

from .operation import GatewayServices, Operation
from .results import GatewayError, OperationStatus, ResultType
from .serde import RowFormat
from .service import SqlGatewayService

__all__ = ["GatewayError", "GatewayServices", "Operation", "OperationStatus", "ResultType",
           "RowFormat", "SqlGatewayService"]
