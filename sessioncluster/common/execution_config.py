"""PyFlink's ``ExecutionConfig``: the settings of a program's execution (``env.get_config()``)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol


class _Environment(Protocol):
    """What an ExecutionConfig reads and sets on its environment (a
    StreamExecutionEnvironment: the client's, which this layer does not import)."""

    def get_parallelism(self) -> int: ...

    def set_parallelism(self, parallelism: int) -> Any: ...

    def get_runtime_mode(self) -> Any: ...


class ExecutionConfig:
    """The execution settings of one StreamExecutionEnvironment; parallelism is the
    environment's own, the others are kept (accepted) for PyFlink programs."""

    def __init__(self, env: _Environment) -> None:
        self._env = env
        self._max_parallelism = -1
        self._object_reuse = False
        self._auto_watermark_interval = 200
        self._global_job_parameters: dict[str, str] = {}
        self._closure_cleaner = True

    def get_parallelism(self) -> int:
        return self._env.get_parallelism()

    def set_parallelism(self, parallelism: int) -> "ExecutionConfig":
        self._env.set_parallelism(parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._max_parallelism

    def set_max_parallelism(self, max_parallelism: int) -> "ExecutionConfig":
        if max_parallelism < 1:
            raise ValueError("max parallelism must be at least 1")
        self._max_parallelism = max_parallelism
        return self

    def enable_object_reuse(self) -> "ExecutionConfig":
        self._object_reuse = True
        return self

    def disable_object_reuse(self) -> "ExecutionConfig":
        self._object_reuse = False
        return self

    def is_object_reuse_enabled(self) -> bool:
        return self._object_reuse

    def enable_closure_cleaner(self) -> "ExecutionConfig":
        self._closure_cleaner = True
        return self

    def disable_closure_cleaner(self) -> "ExecutionConfig":
        self._closure_cleaner = False
        return self

    def is_closure_cleaner_enabled(self) -> bool:
        return self._closure_cleaner

    def get_auto_watermark_interval(self) -> int:
        return self._auto_watermark_interval

    def set_auto_watermark_interval(self, interval: int) -> "ExecutionConfig":
        self._auto_watermark_interval = int(interval)
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return dict(self._global_job_parameters)

    def set_global_job_parameters(self, global_job_parameters_dict: dict[str, Any]) -> "ExecutionConfig":
        self._global_job_parameters = {str(k): str(v) for k, v in global_job_parameters_dict.items()}
        return self

    def get_runtime_mode(self) -> Any:
        return self._env.get_runtime_mode()


class InputDependencyConstraint(Enum):
    """When a task is scheduled considering its inputs (PyFlink's ``pyflink.common`` enum; the
    tasks of a job here are scheduled by Spark)."""

    ANY = 0
    ALL = 1
