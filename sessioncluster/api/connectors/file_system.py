"""PyFlink's ``FileSource`` and ``FileSink`` (``pyflink.datastream.connectors.file_system``).

A FileSource's files are listed by Spark (its ``binaryFile`` source: recursively, hidden files
skipped; in STREAMING mode its file stream, which remembers in the query's checkpoint which files
it has read); each source subtask reads whole files with the source's format (``read_file``).
A FileSink writes each record as a line (``str(record)``) under its base
path, one part file per subtask. ``env.from_source(source, ...)`` and ``ds.sink_to(sink)`` take
them.
"""

from __future__ import annotations

import os
from typing import Any

from ...common.serialization import Encoder
from ...common.time import Duration, to_millis
from ..formats.base import BulkFormat, StreamFormat

__all__ = ["BulkFormat", "FileSink", "FileSource", "FileSourceBuilder", "StreamFormat"]


def _local_or_uri(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise TypeError(f"a file path must be a non-empty str, not {path!r}")
    if "://" in path:
        return path
    return os.path.abspath(os.path.expanduser(path))


# -- source -------------------------------------------------------------------------------------

class FileSource:
    """A source over files and directories (PyFlink's ``FileSource``); build it with
    ``FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths).build()`` or
    ``FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), *paths).build()``.

    As Flink's, it reads every file under its paths, directories recursively, and skips files
    and directories whose names start with ``.`` or ``_`` (in-progress part files, ``_SUCCESS``).
    A directory named ``key=value`` (a partition of a Flink ``filesystem`` table) is read as any
    other: the partition value is not a field of the records (the format's fields are)."""

    def __init__(self, stream_format: "StreamFormat | BulkFormat", paths: tuple[str, ...],
                 discovery_interval_ms: int | None) -> None:
        self.stream_format = stream_format
        self.paths = paths
        #: set by ``monitor_continuously``: the source is unbounded, it needs STREAMING mode
        self.discovery_interval_ms = discovery_interval_ms

    @property
    def bounded(self) -> bool:
        return self.discovery_interval_ms is None

    @property
    def format(self) -> "StreamFormat | BulkFormat":
        return self.stream_format

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> "FileSourceBuilder":
        if not isinstance(stream_format, StreamFormat):
            raise TypeError(f"for_record_stream_format takes a StreamFormat first (e.g. "
                            f"StreamFormat.text_line_format(), CsvReaderFormat.for_schema(...)), "
                            f"not {stream_format!r}")
        return FileSourceBuilder(stream_format, _paths(paths))

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> "FileSourceBuilder":
        if not isinstance(bulk_format, BulkFormat):
            raise TypeError(f"for_bulk_file_format takes a BulkFormat first (e.g. "
                            f"ParquetColumnarRowInputFormat(row_type)), not {bulk_format!r}")
        return FileSourceBuilder(bulk_format, _paths(paths))

    def __repr__(self) -> str:
        how = "bounded" if self.bounded else f"monitored every {self.discovery_interval_ms} ms"
        return f"FileSource({', '.join(self.paths)}; {self.stream_format!r}; {how})"


def _paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    if not paths:
        raise ValueError("a FileSource needs at least one path")
    return tuple(_local_or_uri(p) for p in paths)


class FileSourceBuilder:
    """Builds a FileSource (PyFlink's ``FileSourceBuilder``)."""

    def __init__(self, stream_format: "StreamFormat | BulkFormat", paths: tuple[str, ...]) -> None:
        self._format = stream_format
        self._paths = paths
        self._discovery_interval_ms: int | None = None

    def monitor_continuously(self, discovery_interval: Duration) -> "FileSourceBuilder":
        """Watch the paths for new files, also in new subdirectories, each read once (across
        restarts and restores too): an unbounded source, for STREAMING mode."""
        millis = to_millis(discovery_interval)
        if millis <= 0:
            raise ValueError("the discovery interval must be positive")
        self._discovery_interval_ms = millis
        return self

    def process_static_file_set(self) -> "FileSourceBuilder":
        """Read the files present now, then end (bounded: the default)."""
        self._discovery_interval_ms = None
        return self

    def set_file_enumerator(self, file_enumerator: Any) -> "FileSourceBuilder":
        return self  # accepted: Spark enumerates the files (recursively, as Flink's default)

    def set_split_assigner(self, split_assigner: Any) -> "FileSourceBuilder":
        return self  # accepted: Spark assigns the splits

    def build(self) -> FileSource:
        return FileSource(self._format, self._paths, self._discovery_interval_ms)


# -- sink ---------------------------------------------------------------------------------------

class OutputFileConfig:
    """Part-file prefix and suffix (PyFlink's ``OutputFileConfig``)."""

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        self.part_prefix = part_prefix
        self.part_suffix = part_suffix

    @staticmethod
    def builder() -> "OutputFileConfig.OutputFileConfigBuilder":
        return OutputFileConfig.OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix

    def __repr__(self) -> str:
        return f"OutputFileConfig(part_prefix={self.part_prefix!r}, part_suffix={self.part_suffix!r})"

    class OutputFileConfigBuilder:
        def __init__(self) -> None:
            self._prefix = "part"
            self._suffix = ""

        def with_part_prefix(self, prefix: str) -> "OutputFileConfig.OutputFileConfigBuilder":
            self._prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> "OutputFileConfig.OutputFileConfigBuilder":
            self._suffix = suffix
            return self

        def build(self) -> "OutputFileConfig":
            return OutputFileConfig(self._prefix, self._suffix)


class RollingPolicy:
    """When a part file rolls (PyFlink's ``RollingPolicy``): accepted; in BATCH mode each subtask
    writes one part file."""

    def __init__(self, kind: str, **settings: int) -> None:
        self.kind = kind
        self.settings = settings

    @staticmethod
    def default_rolling_policy(part_size: int = 1024 * 1024 * 128, rollover_interval: int = 60 * 1000,
                               inactivity_interval: int = 60 * 1000) -> "RollingPolicy":
        return RollingPolicy("default", part_size=part_size, rollover_interval=rollover_interval,
                             inactivity_interval=inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> "RollingPolicy":
        return RollingPolicy("on_checkpoint")

    def __repr__(self) -> str:
        return f"RollingPolicy({self.kind}, {self.settings})"


class BucketAssigner:
    """Which bucket (sub-directory) a record goes to: accepted; BATCH mode writes every record
    directly under the base path (as ``base_path_bucket_assigner``)."""

    def __init__(self, kind: str, format_str: str | None = None, timezone_id: str | None = None) -> None:
        self.kind = kind
        self.format_str = format_str
        self.timezone_id = timezone_id

    @staticmethod
    def base_path_bucket_assigner() -> "BucketAssigner":
        return BucketAssigner("base_path")

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH",
                                  timezone_id: str | None = None) -> "BucketAssigner":
        return BucketAssigner("date_time", format_str, timezone_id)


class FileSink:
    """A sink writing records as lines under a base path (PyFlink's ``FileSink``)."""

    def __init__(self, base_path: str, encoder: Encoder, output_file_config: OutputFileConfig,
                 rolling_policy: RollingPolicy, bucket_assigner: BucketAssigner) -> None:
        self.base_path = base_path
        self.encoder = encoder
        self.output_file_config = output_file_config
        self.rolling_policy = rolling_policy
        self.bucket_assigner = bucket_assigner

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> "FileSink.RowFormatBuilder":
        if not isinstance(encoder, Encoder):
            raise TypeError(f"for_row_format takes an Encoder (Encoder.simple_string_encoder()), "
                            f"not {encoder!r}")
        if encoder.charset_name.replace("-", "").lower() != "utf8":
            raise ValueError(f"the FileSink writes UTF-8 only, not {encoder.charset_name!r}")
        return FileSink.RowFormatBuilder(_local_or_uri(base_path), encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: Any) -> Any:
        raise NotImplementedError("bulk formats (Parquet, ORC, Avro) are not supported yet: use "
                                  "FileSink.for_row_format(path, Encoder.simple_string_encoder())")

    def writable_base_path(self) -> str:
        """The base path, checked now: the part files are written by Spark (``saveAsTextFile``),
        which makes the directory itself, so a local base path must not exist yet, or be an empty
        directory (removed here, e.g. one made by ``mktemp -d``)."""
        path = self.base_path
        if "://" not in path and os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path):
                os.rmdir(path)
            else:
                raise FileExistsError(
                    f"the FileSink's base path {path} exists already: sessioncluster's FileSink "
                    "writes a new directory (unlike Flink's, it cannot add part files to one); "
                    "remove it or choose another path")
        return path

    def __repr__(self) -> str:
        return f"FileSink({self.base_path!r}, {self.output_file_config!r})"

    class RowFormatBuilder:
        """Builds a row-format FileSink."""

        def __init__(self, base_path: str, encoder: Encoder) -> None:
            self._base_path = base_path
            self._encoder = encoder
            self._config = OutputFileConfig()
            self._rolling = RollingPolicy.default_rolling_policy()
            self._buckets = BucketAssigner.date_time_bucket_assigner()

        def with_bucket_check_interval(self, interval: int) -> "FileSink.RowFormatBuilder":
            return self

        def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> "FileSink.RowFormatBuilder":
            self._buckets = bucket_assigner
            return self

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> "FileSink.RowFormatBuilder":
            self._rolling = rolling_policy
            return self

        def with_output_file_config(self, output_file_config: OutputFileConfig
                                    ) -> "FileSink.RowFormatBuilder":
            self._config = output_file_config
            return self

        def enable_compact(self, strategy: Any, compactor: Any) -> "FileSink.RowFormatBuilder":
            return self

        def disable_compact(self) -> "FileSink.RowFormatBuilder":
            return self

        def build(self) -> "FileSink":
            return FileSink(self._base_path, self._encoder, self._config, self._rolling, self._buckets)
