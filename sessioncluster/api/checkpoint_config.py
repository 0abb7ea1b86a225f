"""PyFlink's ``CheckpointConfig`` and ``CheckpointingMode``.

In STREAMING mode a checkpoint is one committed micro-batch of the job's Structured Streaming
queries, so the checkpoint interval is their trigger interval. The settings travel in the
JobGraph's configuration under Flink's option names.
"""

from __future__ import annotations

import enum
import os
from typing import Any

from ..common.time import Duration, parse_duration_ms, to_millis
from .formats.base import local_path

INTERVAL = "execution.checkpointing.interval"
MIN_PAUSE = "execution.checkpointing.min-pause"
TIMEOUT = "execution.checkpointing.timeout"
MAX_CONCURRENT = "execution.checkpointing.max-concurrent-checkpoints"
TOLERABLE_FAILURES = "execution.checkpointing.tolerable-failed-checkpoints"
MODE = "execution.checkpointing.mode"
NUM_RETAINED = "state.checkpoints.num-retained"
CHECKPOINTS_DIR = "state.checkpoints.dir"
#: incremental state commits (Spark's RocksDB changelog checkpointing), off by default
INCREMENTAL = "execution.checkpointing.incremental"
RETENTION = "execution.checkpointing.externalized-checkpoint-retention"


class CheckpointingMode(enum.Enum):
    """Spark's micro-batches give exactly-once state; AT_LEAST_ONCE is accepted as well."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(enum.Enum):
    """What happens to a job's checkpoints when it is cancelled (kept as an option: a session
    job's checkpoints here are its Spark queries', kept until the session directory goes)."""

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


class CheckpointConfig:
    """The checkpointing settings of an environment (``env.get_checkpoint_config()``)."""

    def __init__(self) -> None:
        self.options: dict[str, Any] = {}

    # -- interval and mode ---------------------------------------------------------------------
    def is_checkpointing_enabled(self) -> bool:
        return self.get_checkpoint_interval() > 0

    def get_checkpoint_interval(self) -> int:
        return int(self.options.get(INTERVAL, -1))

    def set_checkpoint_interval(self, checkpoint_interval: int | Duration) -> "CheckpointConfig":
        millis = to_millis(checkpoint_interval)
        if millis < 10:
            raise ValueError("Checkpoint interval must be larger than or equal to 10 ms")
        self.options[INTERVAL] = millis
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.options.get(MODE, CheckpointingMode.EXACTLY_ONCE)

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> "CheckpointConfig":
        if not isinstance(checkpointing_mode, CheckpointingMode):
            raise TypeError(f"expected a CheckpointingMode, got {checkpointing_mode!r}")
        self.options[MODE] = checkpointing_mode
        return self

    # -- pauses, timeouts, retention -----------------------------------------------------------
    def get_min_pause_between_checkpoints(self) -> int:
        return int(self.options.get(MIN_PAUSE, 0))

    def set_min_pause_between_checkpoints(self, min_pause_between_checkpoints: int) -> "CheckpointConfig":
        if min_pause_between_checkpoints < 0:
            raise ValueError("Pause value must be zero or positive")
        self.options[MIN_PAUSE] = int(min_pause_between_checkpoints)
        return self

    def get_checkpoint_timeout(self) -> int:
        return int(self.options.get(TIMEOUT, 10 * 60 * 1000))

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> "CheckpointConfig":
        if checkpoint_timeout < 1:
            raise ValueError("Checkpoint timeout must be larger than zero")
        self.options[TIMEOUT] = int(checkpoint_timeout)
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        return int(self.options.get(MAX_CONCURRENT, 1))

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> "CheckpointConfig":
        if max_concurrent_checkpoints < 1:
            raise ValueError("The maximum number of concurrent attempts must be at least one.")
        self.options[MAX_CONCURRENT] = int(max_concurrent_checkpoints)
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return int(self.options.get(TOLERABLE_FAILURES, 0))

    def set_tolerable_checkpoint_failure_number(self, tolerable_checkpoint_failure_number: int
                                                ) -> "CheckpointConfig":
        self.options[TOLERABLE_FAILURES] = int(tolerable_checkpoint_failure_number)
        return self

    def get_num_retained_checkpoints(self) -> int:
        return int(self.options.get(NUM_RETAINED, 1))

    def set_num_retained_checkpoints(self, num: int) -> "CheckpointConfig":
        """How many committed micro-batches Spark keeps (``spark.sql.streaming.minBatchesToRetain``)."""
        if num < 1:
            raise ValueError("the number of retained checkpoints must be at least one")
        self.options[NUM_RETAINED] = int(num)
        return self

    # -- storage -----------------------------------------------------------------------------
    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> "CheckpointConfig":
        """Where the jobs' checkpoints go (default: the session directory's ``checkpoints``)."""
        if "://" not in checkpoint_path or checkpoint_path.startswith("file:"):
            checkpoint_path = os.path.abspath(os.path.expanduser(local_path(checkpoint_path)))
        self.options[CHECKPOINTS_DIR] = checkpoint_path
        return self

    def get_checkpoint_storage(self) -> str | None:
        return self.options.get(CHECKPOINTS_DIR)

    # -- accepted: Spark's micro-batches have no barriers to align ------------------------------
    def enable_unaligned_checkpoints(self, enabled: bool = True) -> "CheckpointConfig":
        return self

    def disable_unaligned_checkpoints(self) -> "CheckpointConfig":
        return self

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return False

    def set_externalized_checkpoint_cleanup(self, cleanup_mode: Any) -> "CheckpointConfig":
        return self

    def enable_externalized_checkpoints(self, cleanup_mode: Any) -> "CheckpointConfig":
        return self

    def set_externalized_checkpoint_retention(
            self, retention_mode: ExternalizedCheckpointRetention) -> "CheckpointConfig":
        self.options[RETENTION] = ExternalizedCheckpointRetention(retention_mode)
        return self

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        """Flink's default: NO_EXTERNALIZED_CHECKPOINTS."""
        return self.options.get(RETENTION,
                                ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS)

    def is_externalized_checkpoints_enabled(self) -> bool:
        return self.get_externalized_checkpoint_retention() is not \
            ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS

    def to_options(self) -> dict[str, Any]:
        """The settings by Flink's option names, as the JobManager reads them."""
        out = {k: (v.name if isinstance(v, enum.Enum) else v) for k, v in self.options.items()}
        return out

    def __repr__(self) -> str:
        return f"CheckpointConfig({self.to_options()})"


__all__ = ["CheckpointConfig", "CheckpointingMode", "Duration", "ExternalizedCheckpointRetention",
           "parse_duration_ms"]
