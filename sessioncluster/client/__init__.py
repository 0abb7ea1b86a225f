"""The client: sessions, the DataStream API, JobClient."""

from .environment import DataStream, KeyedStream, StreamExecutionEnvironment, UnpicklableFunctionError
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

__all__ = [
    "DataStream", "DispatcherError", "JobClient", "JobExecutionException", "JobExecutionResult",
    "JobManagerGoneError", "KeyedStream", "Session", "SessionStartError",
    "SqlExecutionException", "StreamExecutionEnvironment", "UnpicklableFunctionError", "connect",
    "start", "start_standby",
]
