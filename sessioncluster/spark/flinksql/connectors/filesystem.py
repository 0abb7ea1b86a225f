"""Flink's ``filesystem`` connector on Spark: files read by the table's format on the executors
(a ``mapInArrow`` over the files' paths), written as Flink's part files and committed at the end.

Reading skips files and directories whose names start with ``.`` or ``_`` (Flink's default
filter); a partitioned table's partition columns come from its ``k=v`` directories. Writing puts
each subtask's rows of a partition into ``part-<uuid>-task-<subtask>-file-<n>`` (Flink's table
sink naming: one UUID per INSERT), first as a hidden in-progress file, renamed once every subtask
has written: a reader never sees half of an INSERT.
"""

from __future__ import annotations

import datetime
import functools
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote

from ....api.formats.base import local_path
from ....api.table.changelog_mode import ROW_KIND_COLUMN as ROW_KIND
from ....api.table.changelog_mode import SEQ_COLUMN, SUB_COLUMN
from ....api.table.typeparser import parse_type
from ....api.table.types import DataType, DataTypes, LocalZonedTimestampType, RowType, TimeType
from ....runtime.filesink import (
    ManifestLog,
    PendingFile,
    commit,
    delete_in_progress,
    in_progress_name,
)
from ...files import file_stream
from ...filesink import QueryManifests
from ..model import CatalogTable, FlinkSqlError
from .changelogjson import check_sink_options, is_changelog_format
from .formats import (
    arrow_reader,
    file_reader,
    file_row_type,
    plain_row_type,
    takes_batches,
    writer_factory,
)

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
#: the columns a changelog format's records carry after the table's (a changelog table's, as
#: ``from_changelog_stream``'s): the RowKind and the position (then a sub-position 0)
CHANGELOG: list[tuple[str, DataType]] = [(ROW_KIND, DataTypes.STRING()),
                                         (SEQ_COLUMN, DataTypes.BIGINT())]
#: rows per Arrow batch handed to Spark
_BATCH_ROWS = 8192
#: rows written between two checks of a part file's size (the rolling policy)
_ROLL_CHECK_ROWS = 256
#: Hive's (and Flink's PartitionPathUtils') characters escaped in a partition directory name
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}


def escape_partition_value(value: str) -> str:
    """A partition value as its directory name part (``%2F`` for ``/``), as Flink writes it."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def _spark_ddl(fields: list[tuple[str, DataType]]) -> str:
    return ", ".join(f"`{n.replace('`', '``')}` {t.spark_ddl()}" for n, t in fields)


def _physical(table: CatalogTable) -> list[tuple[str, DataType]]:
    return [(c.name, parse_type(c.type or "")) for c in table.physical_columns]


def _file_fields(table: CatalogTable) -> list[tuple[str, DataType]]:
    return [(n, t) for n, t in _physical(table) if n not in table.partition_keys]


# -- reading -----------------------------------------------------------------------------------------

def list_files(path: str, regex: str | None = None) -> list[str]:
    """The files of a table's path (a file, or a directory read recursively), hidden ones
    (``.``/``_``) skipped, in name order; with ``source.path.regex-pattern`` only the files
    whose whole path matches it."""
    root = local_path(path)
    if regex is not None:
        pattern = re.compile(regex)
        return [f for f in list_files(path) if pattern.fullmatch(f)]
    if os.path.isfile(root):
        return [root]
    if not os.path.isdir(root):
        raise FlinkSqlError(f"File {root} does not exist or the user running Flink has "
                            "insufficient permissions to access it.")
    found: list[str] = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        found.extend(os.path.join(directory, n) for n in sorted(names)
                     if not n.startswith((".", "_")))
    return found


def file_signature(table: CatalogTable) -> tuple[tuple[str, int, int], ...] | None:
    """What a bounded read of ``table`` sees of its files: each file's path, size and
    modification time (ns); None when a file went away while looking (the read says which)."""
    options = table.options
    try:
        return tuple((f, st.st_size, st.st_mtime_ns)
                     for f in list_files(options["path"], options.get("source.path.regex-pattern"))
                     for st in (os.stat(f),))
    except OSError:
        return None


def _partition_values(path: str, keys: list[str], default_name: str) -> list[str | None]:
    """The values of the partition keys in a file's ``k=v`` directories."""
    found: dict[str, str] = {}
    for part in local_path(path).split("/")[:-1]:
        key, sep, value = part.partition("=")
        if sep and key in keys:
            found[key] = unquote(value)
    return [None if found.get(k, default_name) == default_name else found[k] for k in keys]


def _file_batches(spec: dict[str, Any], path: str) -> Iterator[Any]:
    """A file's rows as Arrow batches of Spark's types, its partition values appended."""
    import pyarrow as pa

    row_type: RowType = spec["row_type"]
    parts = _partition_values(path, spec["keys"], spec["default_name"])
    schema = spec["arrow_schema"]
    fast = arrow_reader(spec["format"], row_type, spec["options"])
    table = fast(path) if fast is not None else None
    if table is not None:
        for piece in table.to_batches(max_chunksize=_BATCH_ROWS):
            columns = [c.cast(schema.field(i).type, safe=False) for i, c in enumerate(piece.columns)]
            columns += [pa.array([v] * piece.num_rows, pa.string()) for v in parts]
            yield pa.RecordBatch.from_arrays(columns, schema=schema)
        return
    read = file_reader(spec["format"], row_type, spec["options"])
    types = row_type.field_types()

    def batch(rows: list[Any]) -> Any:
        # Spark has no TIME: its text, as Arrow writes it (as the whole-file readers give it)
        columns = [pa.array([r[i] for r in rows], t.to_arrow()).cast(schema.field(i).type)
                   if isinstance(t, TimeType) else None for i, t in enumerate(types)]
        base = _arrow_columns(rows, row_type, schema, columns)
        base += [pa.array([v] * len(rows), pa.string()) for v in parts]
        return pa.RecordBatch.from_arrays(base, schema=schema)

    rows: list[Any] = []
    for row in read(path):
        rows.append(row)
        if len(rows) >= _BATCH_ROWS:
            yield batch(rows)
            rows = []
    if rows:
        yield batch(rows)


def _arrow_columns(rows: list[Any], row_type: RowType, schema: Any, done: list[Any]) -> list[Any]:
    from ....api.formats.base import to_arrow_batch

    plain = file_row_type([(f.name, f.data_type) for f, d in zip(row_type.fields, done) if d is None])
    picked = [[v for v, d in zip(r, done) if d is None] for r in rows]
    converted = to_arrow_batch(picked, plain) if plain.fields else None
    out, k = [], 0
    for i, d in enumerate(done):
        if d is None:
            out.append(converted.column(k).cast(schema.field(i).type))  # type: ignore[union-attr]
            k += 1
        else:
            out.append(d)
    return out


def _read_partition(spec: dict[str, Any], batches: Iterator[Any]) -> Iterator[Any]:
    for paths in batches:
        for path in paths.column(0).to_pylist():
            yield from _file_batches(spec, path)


def _native_parquet(spark: Any, table: CatalogTable, files: list[str], schema: Any) -> Any:
    """The Parquet ``files`` read by Spark's own (JVM, vectorized) reader, when it gives what
    Flink's reader gives for the declared columns: an unpartitioned table of atomic columns
    each found in every file under its exact name (and no other of that name in another case,
    as Spark's matching ignores case) with the very Arrow type the column declares (no cast,
    no nanosecond timestamps, which Spark cannot read). Else None: the files go through
    :func:`_file_batches`, which casts, fills missing columns with nulls and names a bad file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if table.options["format"] != "parquet" or table.partition_keys or not files:
        return None
    row_type = file_row_type(_file_fields(table))
    if not plain_row_type(row_type):
        return None
    wanted = [(f.name, f.data_type.to_arrow()) for f in row_type.fields]
    if any(pa.types.is_timestamp(t) and t.unit == "ns" for _, t in wanted):
        return None
    for path in files:
        try:
            found = pq.read_schema(path)
        except (OSError, pa.ArrowException):
            return None  # the mapInArrow path names the file that is not Parquet
        lowered = [n.lower() for n in found.names]
        for name, arrow_type in wanted:
            if lowered.count(name.lower()) != 1 or found.names.count(name) != 1 \
                    or not found.field(name).type.equals(arrow_type):
                return None
    return spark.read.schema(schema).parquet(*files)


def read_filesystem(spark: Any, table: CatalogTable, streaming: bool) -> Any:
    """The table's rows: a DataFrame, or a streaming one (Spark's file stream, each file read
    once) when ``streaming`` and the table has ``source.monitor-interval``. A changelog
    format's records carry their RowKind and position after the columns (:data:`CHANGELOG`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    options = table.options
    changelog = is_changelog_format(options["format"])
    fields = _file_fields(table) + (CHANGELOG if changelog else [])
    keys = list(table.partition_keys)
    ddl = ", ".join(x for x in (_spark_ddl(fields), ", ".join(f"`{k}` STRING" for k in keys)) if x)
    schema = StructType.fromDDL(ddl)
    assert isinstance(schema, StructType)
    spec = {"format": options["format"], "row_type": file_row_type(fields), "options": options,
            "keys": keys, "default_name": options.get("partition.default-name",
                                                      DEFAULT_PARTITION_NAME),
            "arrow_schema": to_arrow_schema(schema, timezone="UTC")}
    if streaming and "source.monitor-interval" in options:
        paths = file_stream(spark, [local_path(options["path"])])
    else:
        files = list_files(options["path"], options.get("source.path.regex-pattern"))
        native = _native_parquet(spark, table, files, schema)
        if native is not None:
            return native
        if not files:
            paths = spark.createDataFrame([], "path STRING")
        else:
            slices = max(1, min(len(files), spark.sparkContext.defaultParallelism))
            # spark's own createDataFrame: an RDD's toDF would use the thread's active session
            paths = spark.createDataFrame(
                spark.sparkContext.parallelize([(f,) for f in files], slices), "path STRING")
    rows = paths.mapInArrow(functools.partial(_read_partition, spec), schema)
    types = dict(_physical(table))
    return rows.select(*[F.col(f"`{n}`").cast(types[n].spark_ddl()).alias(n) if n in keys
                         else F.col(f"`{n}`") for n, _ in _physical(table)],
                       *([F.col(n) for n, _ in CHANGELOG] + [F.lit(0).cast("bigint").alias(
                           SUB_COLUMN)] if changelog else []))


# -- writing -----------------------------------------------------------------------------------------

def _python_value(value: Any, t: DataType) -> Any:
    if value is None:
        return None
    if isinstance(t, TimeType):
        return datetime.time.fromisoformat(value)
    if isinstance(t, LocalZonedTimestampType) and value.tzinfo is None:
        return value.replace(tzinfo=datetime.timezone.utc)
    return value


def memory_size(text: str) -> int:
    """Flink's MemorySize text (``128MB``, ``64 kb``, ``1g``, ``100``: bytes) in bytes."""
    units = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
             "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
             "gibibytes": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40}
    stripped = text.strip().lower()
    number = stripped.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = stripped[len(number):].strip()
    if not number.isdigit() or unit not in units:
        raise FlinkSqlError(f"Could not parse value '{text}' as a memory size")
    return int(number) * units[unit]


class _PartitionWriters:
    """One subtask's open part files, one per partition directory; a file reaching
    ``sink.rolling-policy.file-size`` is closed and the next rows go to a new one."""

    def __init__(self, spec: dict[str, Any], subtask: int) -> None:
        self.spec = spec
        self.subtask = subtask
        self.factory = writer_factory(spec["format"], spec["row_type"], spec["options"])
        self.open: dict[str, tuple[Any, Any, PendingFile]] = {}
        self.done: list[PendingFile] = []
        self.counter = 0
        self.takes_batches = takes_batches(spec["format"], spec["row_type"], spec["options"])
        self.roll_size = memory_size(spec["options"].get("sink.rolling-policy.file-size", "128MB"))

    def writer(self, directory: str) -> tuple[Any, PendingFile]:
        if directory not in self.open:
            name = f"part-{self.spec['uid']}-task-{self.subtask}-file-{self.counter}"
            self.counter += 1
            os.makedirs(directory, exist_ok=True)
            hidden = os.path.join(directory, in_progress_name(name, self.spec["token"]))
            stream = open(hidden, "wb")
            pending = PendingFile(hidden, os.path.join(directory, name), 0, 0)
            self.open[directory] = (stream, self.factory.create(stream), pending)
        stream, writer, pending = self.open[directory]
        return writer, pending

    def roll_if_full(self, directory: str) -> None:
        stream, writer, pending = self.open[directory]
        if stream.tell() >= self.roll_size:
            self._close(stream, writer, pending)
            del self.open[directory]

    def _close(self, stream: Any, writer: Any, pending: PendingFile) -> None:
        writer.finish()
        stream.close()
        pending.size = os.path.getsize(pending.in_progress)
        self.done.append(pending)

    def finish(self) -> list[PendingFile]:
        for stream, writer, pending in self.open.values():
            self._close(stream, writer, pending)
        self.open.clear()
        return self.done

    def abort(self) -> None:
        for stream, _, pending in self.open.values():
            stream.close()
            self.done.append(pending)
        for pending in self.done:
            if os.path.exists(pending.in_progress):
                os.unlink(pending.in_progress)


def _directory(spec: dict[str, Any], values: list[Any]) -> str:
    parts = [spec["base"]]
    for key, value in zip(spec["keys"], values):
        text = spec["default_name"] if value is None or value == "" else escape_partition_value(
            str(value))
        parts.append(f"{key}={text}")
    return os.path.join(*parts)


def _groups(spec: dict[str, Any], batch: Any) -> dict[str, Any]:
    """The rows of a batch by partition directory (their indices; None: all of them)."""
    if not spec["keys"]:
        return {spec["base"]: None}
    keys = [batch.column(i).to_pylist() for i in spec["key_positions"]]
    groups: dict[str, list[int]] = {}
    for index, values in enumerate(zip(*keys)):
        groups.setdefault(_directory(spec, list(values)), []).append(index)
    return groups


def _write_partition(spec: dict[str, Any], batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa
    from pyspark import TaskContext

    context = TaskContext.get()
    writers = _PartitionWriters(spec, context.partitionId() if context else 0)
    file_positions = spec["file_positions"]
    types = [t for _, t in spec["physical"]] + [DataTypes.STRING()]  # a changelog's kind last
    names = spec["row_type"].field_names()
    try:
        for batch in batches:
            for directory, indices in _groups(spec, batch).items():
                part = batch if indices is None else batch.take(pa.array(indices))
                if writers.takes_batches:
                    writer, pending = writers.writer(directory)
                    writer.add_batch(pa.RecordBatch.from_arrays(
                        [part.column(i) for i in file_positions], names=names))
                    pending.records += part.num_rows
                    writers.roll_if_full(directory)
                    continue
                columns = [part.column(i).to_pylist() for i in file_positions]
                for row in zip(*columns):
                    writer, pending = writers.writer(directory)
                    writer.add_element([_python_value(v, types[i])
                                        for v, i in zip(row, file_positions)])
                    pending.records += 1
                    if pending.records % _ROLL_CHECK_ROWS == 0:
                        writers.roll_if_full(directory)
        done = writers.finish()
    except BaseException:
        writers.abort()
        raise
    yield pa.RecordBatch.from_pylist(
        [{"in_progress": p.in_progress, "final": p.final, "records": p.records, "size": p.size}
         for p in done],
        schema=pa.schema([("in_progress", pa.string()), ("final", pa.string()),
                          ("records", pa.int64()), ("size", pa.int64())]))


def _visible_files(directory: str) -> list[str]:
    if not os.path.isdir(directory):
        return []
    return [os.path.join(d, n) for d, _, names in os.walk(directory) for n in names
            if not n.startswith((".", "_"))]


@dataclass(frozen=True)
class StagedBatch:
    """One micro-batch of a STREAMING sink: its part files recorded in the query's
    :class:`ManifestLog` and left pending, to be committed once Spark has committed the batch
    (Flink's filesystem sink commits on checkpoint), so that a batch Spark runs again replaces
    the pending files of its first attempt instead of adding to them."""

    manifests: ManifestLog
    batch_id: int


def staged_sink(table: CatalogTable, checkpoint: Path) -> QueryManifests:
    """The manifests of a streaming INSERT's ``filesystem`` sink in its query's checkpoint:
    each micro-batch's files staged there (:class:`StagedBatch`), as the DataStream
    FileSink's."""
    return QueryManifests(checkpoint, 0, local_path(table.options["path"]))


def write_filesystem(df: Any, table: CatalogTable, overwrite: bool,
                     staged: StagedBatch | None = None) -> int:
    """Write ``df`` (the table's physical columns, by position) as the table's files; with
    ``overwrite`` replace the table's files (of a partitioned table: the partitions written).
    A changelog format's records carry their RowKind in a last column :data:`ROW_KIND` (``+I``
    when ``df`` has none). The files are committed at once, or with ``staged`` left pending in
    the micro-batch's manifest. Returns the number of rows written."""
    from pyspark.sql import functions as F

    options = table.options
    physical = _physical(table)
    kinds = is_changelog_format(options["format"])
    if kinds:
        refused = check_sink_options(options["format"], options)
        if refused is not None:
            raise FlinkSqlError(refused)
        kind = F.col(ROW_KIND) if df.columns[-1:] == [ROW_KIND] else F.lit("+I")
        df = df.select(*[F.col(f"`{c}`") for c in df.columns if c != ROW_KIND],
                       kind.alias(ROW_KIND))
    if len(df.columns) - kinds != len(physical):
        raise FlinkSqlError(f"Column types of query result and sink for '{table.name}' do not "
                            f"match: the query has {len(df.columns) - kinds} columns, the table "
                            f"{len(physical)}")
    names = [n for n, _ in physical]
    df = df.select(*[F.col(f"`{c}`").cast(t.spark_ddl()).alias(n)
                     for c, (n, t) in zip(df.columns, physical)],
                   *([F.col(ROW_KIND)] if kinds else []))
    if "sink.parallelism" in options:
        df = df.repartition(int(options["sink.parallelism"]))
    if table.partition_keys and options.get("sink.shuffle-by-partition.enable", "") == "true":
        df = df.repartition(*[F.col(f"`{k}`") for k in table.partition_keys])
    token = uuid.uuid4().hex
    base = local_path(options["path"])
    row_type = file_row_type(_file_fields(table))
    uid = str(uuid.uuid4())
    spec = {"format": options["format"], "row_type": row_type,
            "options": options, "keys": list(table.partition_keys), "base": base,
            "default_name": options.get("partition.default-name", DEFAULT_PARTITION_NAME),
            "uid": uid, "token": token, "physical": physical,
            "file_positions": [i for i, n in enumerate(names) if n not in table.partition_keys]
            + ([len(names)] if kinds else []),
            "key_positions": [names.index(k) for k in table.partition_keys]}
    schema = "in_progress STRING, final STRING, records BIGINT, size BIGINT"
    if staged is not None:  # before any file exists: a crash leaves nothing unaccounted for
        staged.manifests.begin(staged.batch_id, [uid])
    try:
        written = [PendingFile(r["in_progress"], r["final"], r["records"], r["size"]) for r in
                   df.mapInArrow(functools.partial(_write_partition, spec), schema).collect()]
    except BaseException:
        delete_in_progress(base, lambda name: name.endswith(token))
        raise
    if overwrite:
        directories = {os.path.dirname(p.final) for p in written} if table.partition_keys \
            else {base}
        for directory in directories:
            for old in _visible_files(directory):
                os.unlink(old)
    if staged is not None:
        staged.manifests.complete(staged.batch_id, [uid], written)
    else:
        commit(written)
    return sum(p.records for p in written)
