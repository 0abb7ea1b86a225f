"""PyFlink's ``FileSource`` and ``FileSink`` (``pyflink.datastream.connectors.file_system``).

A FileSource's files are listed by Spark (its ``binaryFile`` source: recursively, hidden files
skipped; in STREAMING mode its file stream, which remembers in the query's checkpoint which files
it has read); each source subtask reads whole files with the source's format (``read_file``).
A FileSink writes part files in bucket directories under its base path, hidden while in
progress and committed when the job finishes (BATCH) or when Spark has committed the micro-batch
(STREAMING): a row format (an ``Encoder``, a line per record) or a bulk format (a
``BulkWriterFactory``: Parquet, CSV, Avro, ORC). ``env.from_source(source, ...)`` and
``ds.sink_to(sink)`` take them.
"""

from __future__ import annotations

import copy
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
# Flink's FileSink: records go to buckets (sub-directories of the base path, chosen by the
# BucketAssigner), each sink subtask writes its own part files there, named
# ``<prefix>-<uid>-<partFileIndex><suffix>`` (uid: a random UUID of the subtask's run), hidden as
# ``.<name>.inprogress.<uuid>`` until committed: at the end of a BATCH job, when the checkpoint
# (micro-batch) completes in STREAMING. The writing and committing are runtime/filesink.py's.

class OutputFileConfig:
    """Part-file prefix and suffix (PyFlink's ``OutputFileConfig``)."""

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        for what, value in (("prefix", part_prefix), ("suffix", part_suffix)):
            if not isinstance(value, str) or "/" in value or os.sep in value:
                raise ValueError(f"a part {what} is a file name part, not {value!r}")
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
    """When a part file rolls, i.e. is closed and a new one begins (PyFlink's ``RollingPolicy``).

    ``default_rolling_policy``: once it is larger than ``part_size`` bytes, older than
    ``rollover_interval`` ms or has had no record for ``inactivity_interval`` ms, and at every
    checkpoint; ``on_checkpoint_rolling_policy``: only at checkpoints (and at the end of input).
    """

    def __init__(self, kind: str, **settings: int) -> None:
        self.kind = kind
        self.settings = settings

    @staticmethod
    def default_rolling_policy(part_size: int = 1024 * 1024 * 128, rollover_interval: int = 60 * 1000,
                               inactivity_interval: int = 60 * 1000) -> "RollingPolicy":
        for name, value in (("part_size", part_size), ("rollover_interval", rollover_interval),
                            ("inactivity_interval", inactivity_interval)):
            if int(value) <= 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        return RollingPolicy("default", part_size=int(part_size), rollover_interval=int(rollover_interval),
                             inactivity_interval=int(inactivity_interval))

    @staticmethod
    def on_checkpoint_rolling_policy() -> "RollingPolicy":
        return RollingPolicy("on_checkpoint")

    def should_roll_on_event(self, size: int) -> bool:
        """Before a record is written to a part file of ``size`` bytes: roll first?"""
        return self.kind == "default" and size > self.settings["part_size"]

    def should_roll_on_processing_time(self, created_ms: int, last_write_ms: int, now_ms: int) -> bool:
        """At processing time ``now_ms``: roll the part file opened at ``created_ms``, last
        written at ``last_write_ms``?"""
        if self.kind != "default":
            return False
        return (now_ms - created_ms >= self.settings["rollover_interval"]
                or now_ms - last_write_ms >= self.settings["inactivity_interval"])

    def __repr__(self) -> str:
        return f"RollingPolicy({self.kind}, {self.settings})"


#: Java's SimpleDateFormat letters (DateTimeFormatter's, as Flink's DateTimeBucketAssigner uses)
#: that buckets use, as strftime directives; "S" (fraction of a second) is handled apart
_JAVA_DATE_LETTERS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "M": "%-m", "dd": "%d", "d": "%-d",
                      "HH": "%H", "H": "%-H", "mm": "%M", "m": "%-M", "ss": "%S", "s": "%-S",
                      "EEE": "%a", "EEEE": "%A", "MMM": "%b", "MMMM": "%B", "a": "%p", "D": "%-j",
                      "DDD": "%j", "Z": "%z", "z": "%Z", "u": "%u", "w": "%-V", "ww": "%V"}


def java_date_format_to_strftime(pattern: str) -> str:
    """A Java date pattern (``yyyy-MM-dd--HH``, quoted literals ``'T'``) as a ``strftime``
    format; ``S``... (milliseconds) become ``%f`` cut to that many digits by the caller."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end == -1:
                raise ValueError(f"unclosed quote in the date pattern {pattern!r}")
            out.append(pattern[i + 1:end].replace("%", "%%") if end > i + 1 else "'")
            i = end + 1
            continue
        j = i
        while j < len(pattern) and pattern[j] == c:
            j += 1
        run = pattern[i:j]
        if c.isalpha():
            if c == "S":
                out.append(f"%{len(run)}f")
            elif run in _JAVA_DATE_LETTERS:
                out.append(_JAVA_DATE_LETTERS[run])
            elif c in "yMdHms" and len(run) > 2:
                out.append(_JAVA_DATE_LETTERS[run[:2]] if c != "y" else "%Y")
            else:
                raise ValueError(f"the date pattern letter(s) {run!r} of {pattern!r} are not supported")
        else:
            out.append(run.replace("%", "%%"))
        i = j
    return "".join(out)


def format_date(fmt: str, now_ms: int, timezone_id: str | None) -> str:
    """``now_ms`` (epoch ms) formatted with a ``java_date_format_to_strftime`` format, in the
    zone ``timezone_id`` (the machine's when None)."""
    import datetime
    import re

    if timezone_id is None:
        moment = datetime.datetime.fromtimestamp(now_ms / 1000).astimezone()
    else:
        import zoneinfo

        moment = datetime.datetime.fromtimestamp(now_ms / 1000, zoneinfo.ZoneInfo(timezone_id))
    millis = f"{now_ms % 1000:03d}"
    fmt = re.sub(r"%(\d+)f", lambda m: millis[:int(m.group(1))].ljust(int(m.group(1)), "0"), fmt)
    return moment.strftime(fmt)


class BucketAssigner:
    """Which bucket (sub-directory of the base path) a record goes to (PyFlink's
    ``BucketAssigner``): ``date_time_bucket_assigner`` (the default: the processing time when
    the record is written, ``yyyy-MM-dd--HH``) or ``base_path_bucket_assigner`` (no
    sub-directory). A subclass may override ``get_bucket_id(element, context)``."""

    kind = "custom"
    format_str: str | None = None
    timezone_id: str | None = None
    _strftime: str | None = None

    def __init__(self, kind: str = "custom", format_str: str | None = None,
                 timezone_id: str | None = None) -> None:
        self.kind = kind
        self.format_str = format_str
        self.timezone_id = timezone_id
        self._strftime = java_date_format_to_strftime(format_str) if format_str else None
        if timezone_id is not None:
            import zoneinfo

            try:
                zoneinfo.ZoneInfo(timezone_id)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {timezone_id!r}") from None

    @staticmethod
    def base_path_bucket_assigner() -> "BucketAssigner":
        return BucketAssigner("base_path")

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH",
                                  timezone_id: str | None = None) -> "BucketAssigner":
        return BucketAssigner("date_time", format_str, timezone_id)

    def get_bucket_id(self, element: Any, context: Any) -> str:
        """The bucket of ``element``: a path relative to the base path ("" for the base path);
        ``context`` has ``current_processing_time()``, ``current_watermark()``, ``timestamp()``."""
        if self.kind == "base_path":
            return ""
        if self.kind == "date_time" and self._strftime is not None:
            return format_date(self._strftime, context.current_processing_time(), self.timezone_id)
        raise NotImplementedError("a BucketAssigner subclass overrides get_bucket_id(element, context)")

    def __repr__(self) -> str:
        if self.kind == "date_time":
            return f"BucketAssigner.date_time_bucket_assigner({self.format_str!r}, {self.timezone_id!r})"
        return f"BucketAssigner.{self.kind}_bucket_assigner()" if self.kind == "base_path" \
            else f"{type(self).__name__}()"


class FileSink:
    """Writes records into part files under a base path, in buckets (PyFlink's ``FileSink``):
    ``for_row_format(path, encoder)`` (each record encoded on its own, e.g. a line) or
    ``for_bulk_format(path, writer_factory)`` (a columnar or block format). A base path that
    exists is written on into: each job, run and sink adds part files of its own."""

    def __init__(self, base_path: str, encoder: Encoder | None, output_file_config: OutputFileConfig,
                 rolling_policy: RollingPolicy, bucket_assigner: BucketAssigner,
                 writer_factory: Any = None) -> None:
        self.base_path = base_path
        self.encoder = encoder
        self.writer_factory = writer_factory
        self.output_file_config = output_file_config
        self.rolling_policy = rolling_policy
        self.bucket_assigner = bucket_assigner

    @property
    def is_bulk(self) -> bool:
        return self.writer_factory is not None

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> "FileSink.RowFormatBuilder":
        if not isinstance(encoder, Encoder):
            raise TypeError(f"for_row_format takes an Encoder (Encoder.simple_string_encoder()), "
                            f"not {encoder!r}")
        return FileSink.RowFormatBuilder(_sink_path(base_path), encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: Any) -> "FileSink.BulkFormatBuilder":
        if not callable(getattr(writer_factory, "create", None)):
            raise TypeError("for_bulk_format takes a bulk writer factory (with create(stream), e.g. "
                            f"one of pyflink.datastream.formats), not {writer_factory!r}")
        return FileSink.BulkFormatBuilder(_sink_path(base_path), writer_factory)

    def of_record_type(self, record_type: Any) -> "FileSink":
        """This sink for a stream whose records are declared of ``record_type`` (a copy): a
        row format writes their Java text, as Flink's ``SimpleStringEncoder`` does."""
        if self.encoder is None:
            return self
        sink = copy.copy(self)
        sink.encoder = self.encoder.of_record_type(record_type)
        return sink

    def check_base_path(self) -> str:
        """The base path, checked now (at submission): it must be a directory this process can
        write into, or not exist yet under one it can."""
        path = self.base_path
        if os.path.lexists(path) and not os.path.isdir(path):
            raise NotADirectoryError(f"the FileSink's base path {path} is a file, not a directory")
        probe = path
        while not os.path.exists(probe):
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
        if not os.path.isdir(probe):
            raise NotADirectoryError(f"the FileSink cannot create {path}: {probe} is a file")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise PermissionError(f"the FileSink cannot write into {probe} (base path {path}): "
                                  "permission denied")
        return path

    def __repr__(self) -> str:
        what = f"bulk {self.writer_factory!r}" if self.is_bulk else repr(self.encoder)
        return f"FileSink({self.base_path!r}, {what}, {self.bucket_assigner!r}, {self.output_file_config!r})"

    class _Builder:
        def __init__(self, base_path: str) -> None:
            self._base_path = base_path
            self._config = OutputFileConfig()
            self._rolling = RollingPolicy.default_rolling_policy()
            self._buckets = BucketAssigner.date_time_bucket_assigner()

        def with_bucket_check_interval(self, interval: int) -> Any:
            return self  # processing-time rolling is checked as records are written

        def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> Any:
            if not isinstance(bucket_assigner, BucketAssigner):
                raise TypeError(f"with_bucket_assigner takes a BucketAssigner, not {bucket_assigner!r}")
            self._buckets = bucket_assigner
            return self

        def with_output_file_config(self, output_file_config: OutputFileConfig) -> Any:
            if not isinstance(output_file_config, OutputFileConfig):
                raise TypeError(f"with_output_file_config takes an OutputFileConfig, not "
                                f"{output_file_config!r}")
            self._config = output_file_config
            return self

        def enable_compact(self, strategy: Any, compactor: Any) -> Any:
            raise NotImplementedError("the FileSink's compaction is not supported")

        def disable_compact(self) -> Any:
            return self

    class RowFormatBuilder(_Builder):
        """Builds a row-format FileSink."""

        def __init__(self, base_path: str, encoder: Encoder) -> None:
            super().__init__(base_path)
            self._encoder = encoder

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> "FileSink.RowFormatBuilder":
            if not isinstance(rolling_policy, RollingPolicy):
                raise TypeError(f"with_rolling_policy takes a RollingPolicy, not {rolling_policy!r}")
            self._rolling = rolling_policy
            return self

        def build(self) -> "FileSink":
            return FileSink(self._base_path, self._encoder, self._config, self._rolling, self._buckets)

    class BulkFormatBuilder(_Builder):
        """Builds a bulk-format FileSink: its part files roll at checkpoints only."""

        def __init__(self, base_path: str, writer_factory: Any) -> None:
            super().__init__(base_path)
            self._factory = writer_factory
            self._rolling = RollingPolicy.on_checkpoint_rolling_policy()

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> "FileSink.BulkFormatBuilder":
            if not isinstance(rolling_policy, RollingPolicy) or rolling_policy.kind != "on_checkpoint":
                raise ValueError("a bulk-format FileSink rolls on checkpoints only: "
                                 "with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())")
            self._rolling = rolling_policy
            return self

        def build(self) -> "FileSink":
            return FileSink(self._base_path, None, self._config, self._rolling, self._buckets,
                            self._factory)


def _sink_path(base_path: str) -> str:
    """A FileSink's base path as a local path (``file://`` URIs too): its part files are renamed
    in place, which needs a file system the TaskManagers and the JobManager all see."""
    if isinstance(base_path, str) and base_path.startswith("file://"):
        base_path = base_path.removeprefix("file://") or "/"
    path = _local_or_uri(base_path)
    if "://" in path:
        raise ValueError(f"the FileSink writes local or mounted shared file systems only, not {path}")
    return path
