"""The client: sessions, the DataStream API, JobClient."""

from .datastream import DataStream, KeyedStream
from .environment import StreamExecutionEnvironment
from .gateway import DispatcherError, JobManagerGoneError
from .jobclient import JobClient, JobExecutionException, JobExecutionResult
from .session import (
    Session,
    SessionStartError,
    SqlExecutionException,
    connect,
    start,
    start_standby,
)
from .shipping import UnpicklableFunctionError

__all__ = [
    "DataStream", "DispatcherError", "JobClient", "JobExecutionException", "JobExecutionResult",
    "JobManagerGoneError", "KeyedStream", "Session", "SessionStartError",
    "SqlExecutionException", "StreamExecutionEnvironment", "UnpicklableFunctionError", "connect",
    "start", "start_standby",
]
