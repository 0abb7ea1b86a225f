"""The FileSink's pure parts: names, buckets, rolling, bulk writers, commits and the STREAMING
manifests (runtime/filesink.py, api/connectors/file_system.py's sink part)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.api.connectors.file_system import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
    format_date,
    java_date_format_to_strftime,
)
from sessioncluster.common.serialization import Encoder
from sessioncluster.runtime.filesink import (
    ManifestLog,
    SubtaskWriter,
    batch_token,
    checkpoint_token,
    commit,
    in_progress_files,
    write_partition,
)

UID = "52e77bd9-b527-4506-9e59-f1409229ecba"


def visible(base: Path) -> dict[str, list[str]]:
    """The committed part files under ``base``, by path relative to it, as lines."""
    return {str(p.relative_to(base)): p.read_text().splitlines() for p in sorted(base.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def row_sink(base: Path, **kw: Any) -> FileSink:
    builder = FileSink.for_row_format(str(base), Encoder.simple_string_encoder())
    builder.with_bucket_assigner(kw.get("buckets", BucketAssigner.base_path_bucket_assigner()))
    if "rolling" in kw:
        builder.with_rolling_policy(kw["rolling"])
    if "config" in kw:
        builder.with_output_file_config(kw["config"])
    return builder.build()


def test_java_date_patterns_become_strftime() -> None:
    assert java_date_format_to_strftime("yyyy-MM-dd--HH") == "%Y-%m-%d--%H"
    assert java_date_format_to_strftime("yyyy/MM/dd/'h'HH") == "%Y/%m/%d/h%H"
    ms = 1_764_094_200_123  # 2025-11-25T18:10:00.123Z
    assert format_date(java_date_format_to_strftime("yyyy-MM-dd--HH"), ms, "UTC") == "2025-11-25--18"
    assert format_date(java_date_format_to_strftime("HH:mm:ss.SSS"), ms, "Asia/Tokyo") == "03:10:00.123"
    with pytest.raises(ValueError, match="not supported"):
        java_date_format_to_strftime("yyyy-QQ")


def test_row_format_part_files_are_hidden_until_committed(tmp_path: Path) -> None:
    sink = row_sink(tmp_path, config=OutputFileConfig.builder().with_part_prefix("p")
                    .with_part_suffix(".txt").build())
    files, next_index = write_partition(sink, UID, "tok", [1, "two", (3, "x")])
    assert [Path(f.final).name for f in files] == [f"p-{UID}-0.txt"]
    assert Path(files[0].in_progress).name == f".p-{UID}-0.txt.inprogress.tok"
    assert next_index == {"": 1}
    assert visible(tmp_path) == {}  # pending: hidden
    assert commit(files) == 1
    assert visible(tmp_path) == {f"p-{UID}-0.txt": ["1", "two", "(3, 'x')"]}
    assert commit(files) == 0  # committed already: nothing to do
    os.unlink(files[0].final)
    with pytest.raises(FileNotFoundError, match="cannot be committed"):
        commit(files)


def test_date_time_buckets_use_the_processing_time(tmp_path: Path) -> None:
    sink = row_sink(tmp_path, buckets=BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd--HH", "UTC"))
    now = [1_764_094_200_000]
    writer = SubtaskWriter(sink, UID, "t", clock=lambda: now[0])
    writer.write("a")
    now[0] += 3600 * 1000  # an hour later: the next bucket
    writer.write("b")
    writer.write("c")
    commit(writer.close_for_commit())
    assert visible(tmp_path) == {f"2025-11-25--18/part-{UID}-0": ["a"],
                                 f"2025-11-25--19/part-{UID}-0": ["b", "c"]}


def test_a_users_bucket_assigner(tmp_path: Path) -> None:
    class ByParity(BucketAssigner):
        def get_bucket_id(self, element: Any, context: Any) -> str:
            assert context.current_processing_time() > 0
            return "even" if element % 2 == 0 else "odd"

    commit(write_partition(row_sink(tmp_path, buckets=ByParity()), UID, "t", range(5))[0])
    assert visible(tmp_path) == {f"even/part-{UID}-0": ["0", "2", "4"], f"odd/part-{UID}-0": ["1", "3"]}

    class Escaping(BucketAssigner):
        def get_bucket_id(self, element: Any, context: Any) -> str:
            return "../out"

    with pytest.raises(ValueError, match="inside the base path"):
        write_partition(row_sink(tmp_path / "b", buckets=Escaping()), UID, "t", [1])


def test_default_rolling_policy_rolls_by_size_and_time(tmp_path: Path) -> None:
    # each line is 4 bytes: a part rolls before the record that finds it over 8 bytes
    sink = row_sink(tmp_path, rolling=RollingPolicy.default_rolling_policy(part_size=8))
    files, next_index = write_partition(sink, UID, "t", [f"r{i:02d}" for i in range(7)],
                                        next_index={"": 5})
    assert [Path(f.final).name for f in files] == [f"part-{UID}-{i}" for i in (5, 6, 7)]
    assert [f.records for f in files] == [3, 3, 1] and next_index == {"": 8}
    now = [1000]
    timed = row_sink(tmp_path / "t", rolling=RollingPolicy.default_rolling_policy(
        rollover_interval=60, inactivity_interval=30))
    writer = SubtaskWriter(timed, UID, "t", clock=lambda: now[0])
    for step in (0, 20, 20, 40, 20, 20, 20):  # inactive for 40 ms; 60 ms since the second opened
        now[0] += step
        writer.write(now[0])
    assert [f.records for f in writer.close_for_commit()] == [3, 3, 1]
    on_checkpoint = RollingPolicy.on_checkpoint_rolling_policy()
    assert not on_checkpoint.should_roll_on_event(10**12)
    assert not on_checkpoint.should_roll_on_processing_time(0, 0, 10**12)


class JsonLines:
    """A bulk writer factory for the test: a JSON line per element, a count at the end."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def create(self, stream: Any) -> Any:
        factory = self

        class Writer:
            n = 0

            def add_element(self, element: Any) -> None:
                factory.calls.append("add_element")
                stream.write((json.dumps(element) + "\n").encode())
                self.n += 1

            def flush(self) -> None:
                factory.calls.append("flush")

            def finish(self) -> None:
                factory.calls.append("finish")
                assert not stream.closed  # finish does not close the stream: the sink does
                stream.write(f"# {self.n}\n".encode())

        self.calls.append("create")
        return Writer()


def test_bulk_format_plumbing(tmp_path: Path) -> None:
    factory = JsonLines()
    sink = (FileSink.for_bulk_format(str(tmp_path), factory)
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_output_file_config(OutputFileConfig("data", ".jsonl")).build())
    assert sink.is_bulk and sink.rolling_policy.kind == "on_checkpoint"
    writer = SubtaskWriter(sink, UID, "t")
    writer.write({"a": 1})
    writer.write([2])
    commit(writer.close_for_commit())
    assert factory.calls == ["create", "add_element", "add_element", "flush", "finish"]
    assert visible(tmp_path) == {f"data-{UID}-0.jsonl": ['{"a": 1}', "[2]", "# 2"]}
    with pytest.raises(ValueError, match="rolls on checkpoints only"):
        FileSink.for_bulk_format(str(tmp_path), factory).with_rolling_policy(
            RollingPolicy.default_rolling_policy())
    with pytest.raises(TypeError, match="bulk writer factory"):
        FileSink.for_bulk_format(str(tmp_path), object())


def test_a_failed_subtask_leaves_no_in_progress_file(tmp_path: Path) -> None:
    def records() -> Any:
        yield from range(10)
        raise RuntimeError("boom")

    sink = row_sink(tmp_path, rolling=RollingPolicy.default_rolling_policy(part_size=4))
    with pytest.raises(RuntimeError, match="boom"):
        write_partition(sink, UID, "t", records())
    assert list(tmp_path.rglob("*")) == []


def test_tokens_are_uuids_and_stable() -> None:
    assert batch_token("j", "v") == batch_token("j", "v") != batch_token("j", "w")
    assert checkpoint_token(UID, 3) == checkpoint_token(UID, 3) != checkpoint_token(UID, 4)
    assert len(checkpoint_token(UID, 3)) == 36


def test_manifests_commit_what_spark_committed_and_undo_the_rest(tmp_path: Path) -> None:
    base, log_dir = tmp_path / "out", tmp_path / "ckpt" / "filesink" / "0"
    sink = row_sink(base)
    manifests = ManifestLog(log_dir, str(base))
    other = write_partition(sink, "someone-else", "x", ["theirs"])[0]  # another job's pending file
    uids = [UID]
    for batch in (0, 1, 2):
        manifests.begin(batch, uids)
        files, _ = write_partition(sink, UID, checkpoint_token(UID, batch), [f"b{batch}"],
                                   next_index={"": batch})
        if batch < 2:  # batch 2 failed half-way: its files are written, its manifest is not
            manifests.complete(batch, uids, files)
    assert manifests.commit_committed(lambda b: b <= 0) == [0]
    assert visible(base) == {f"part-{UID}-0": ["b0"]}
    assert manifests.batches() == [1, 2]
    done, undone = manifests.recover(lambda b: b <= 1)  # a restart: Spark committed batch 1 only
    assert (done, undone) == ([1], [2])
    assert visible(base) == {f"part-{UID}-0": ["b0"], f"part-{UID}-1": ["b1"]}
    assert [p.name for p in in_progress_files(str(base), lambda n: True)] == \
        [Path(other[0].in_progress).name]  # batch 2's file is gone, the other job's is not
    assert manifests.batches() == []


def test_base_path_checks(tmp_path: Path) -> None:
    existing = tmp_path / "out"
    existing.mkdir()
    (existing / "part-00000").write_text("x\n")
    assert row_sink(existing).check_base_path() == str(existing)  # written on into
    assert row_sink(tmp_path / "new" / "deeper").check_base_path() == str(tmp_path / "new" / "deeper")
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(NotADirectoryError, match="is a file"):
        row_sink(a_file).check_base_path()
    with pytest.raises(NotADirectoryError, match="is a file"):
        row_sink(a_file / "below").check_base_path()
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(PermissionError, match="cannot write"):
            row_sink(locked / "out").check_base_path()
    assert FileSink.for_row_format(f"file://{existing}", Encoder.simple_string_encoder()).build() \
        .base_path == str(existing)
    with pytest.raises(ValueError, match="local or mounted"):
        FileSink.for_row_format("hdfs://nn/out", Encoder.simple_string_encoder())


def _copy_inputs(tmp_path: Path) -> tuple[Any, list[Path]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sessioncluster.api.table.types import DataTypes

    row_type = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()),
                              DataTypes.FIELD("name", DataTypes.STRING())])
    paths = []
    for f in range(2):
        path = tmp_path / f"in-{f}.parquet"
        ids = list(range(f * 10_000, (f + 1) * 10_000))
        pq.write_table(pa.table({"id": ids, "name": [None if i % 3 else f"n{i}" for i in ids]}),
                       path, row_group_size=3000)
        paths.append(path)
    return row_type, paths


def test_batch_copy_writes_tables_with_the_rows_of_the_row_path(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from sessioncluster.api.formats.parquet import ParquetBulkWriters, ParquetColumnarRowInputFormat
    from sessioncluster.runtime.filesink import batch_copy

    row_type, paths = _copy_inputs(tmp_path)
    source = ParquetColumnarRowInputFormat(row_type)
    outputs = {}
    for how in ("tables", "rows"):
        out = tmp_path / how
        sink = (FileSink.for_bulk_format(str(out), ParquetBulkWriters.for_row_type(row_type))
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        read = batch_copy(source, sink)
        assert read is not None
        if how == "tables":
            elements = (t for p in paths for t in read(str(p)))
        else:
            elements = (r for p in paths for r in source.read_file(str(p)))
        files, _ = write_partition(sink, UID, "t", elements, tables=how == "tables")
        commit(files)
        assert [f.records for f in files] == [20_000]
        outputs[how] = pq.read_table(files[0].final)
        groups = pq.ParquetFile(files[0].final).metadata.num_row_groups
        assert groups == (1 if how == "tables" else 3)  # 8192 rows a row group from Rows
    assert outputs["tables"].equals(outputs["rows"])


def test_batch_copy_only_where_no_record_needs_to_be_a_row(tmp_path: Path) -> None:
    from sessioncluster.api.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
    from sessioncluster.api.formats.parquet import ParquetBulkWriters, ParquetColumnarRowInputFormat
    from sessioncluster.api.table.types import DataTypes
    from sessioncluster.runtime.filesink import batch_copy

    row_type, _ = _copy_inputs(tmp_path)
    source = ParquetColumnarRowInputFormat(row_type)

    def sink(writers: Any, assigner: BucketAssigner | None = None) -> FileSink:
        builder = FileSink.for_bulk_format(str(tmp_path / "out"), writers)
        return builder.with_bucket_assigner(assigner).build() if assigner else builder.build()

    parquet = ParquetBulkWriters.for_row_type(row_type)
    assert batch_copy(source, sink(parquet)) is not None  # the default (date-time) buckets
    csv = CsvSchema.builder().add_number_column("n").add_string_column("s").build()
    # other column names, the same types: positional, as a Row is written
    assert batch_copy(source, sink(CsvBulkWriters.for_schema(csv))) is not None

    class ByName(BucketAssigner):
        def get_bucket_id(self, element: Any, context: Any) -> str:
            return str(element[1])

    assert batch_copy(source, sink(parquet, ByName())) is None  # looks at each record
    other = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()),
                           DataTypes.FIELD("name", DataTypes.STRING())])
    assert batch_copy(source, sink(ParquetBulkWriters.for_row_type(other))) is None
    arrays = CsvSchema.builder().add_number_column("n").add_array_column("a").build()
    assert batch_copy(source, sink(CsvBulkWriters.for_schema(arrays))) is None
    row_format = FileSink.for_row_format(str(tmp_path / "rows"), Encoder.simple_string_encoder())
    assert batch_copy(source, row_format.build()) is None
    text = FileSink.for_bulk_format(str(tmp_path / "t"), parquet).build()
    assert batch_copy(CsvReaderFormat.for_schema(arrays), text) is None


def test_row_format_writes_the_java_text_of_the_declared_type(tmp_path: Path) -> None:
    """What Flink 2.3's SimpleStringEncoder wrote per declared type, BATCH and STREAMING alike
    (/work/briefs/data/javaprint2/probe_filesink.out): Java's toString, a ROW as Flink's Row
    (``+I[a, 1]``, not print()'s ``+I[a,1]``); no declared type: Python's str (Flink: [B@hash)."""
    from sessioncluster.common.typeinfo import Types as T
    from sessioncluster.common.typeinfo import as_declared
    from sessioncluster.common.types import Row

    cases = [
        (T.STRING(), ["a", "", "x y"], ["a", "", "x y"]),
        (T.INT(), [1, -5], ["1", "-5"]),
        (T.TUPLE([T.STRING(), T.INT(), T.LONG(), T.FLOAT(), T.DOUBLE(), T.BOOLEAN()]),
         [("hi", 1, 2, 0.1, 1e-5, True)], ["(hi,1,2,0.1,1.0E-5,true)"]),
        (T.ROW([T.STRING(), T.INT()]), [Row("a", 1), Row(None, 2)], ["+I[a, 1]", "+I[null, 2]"]),
        (T.ROW_NAMED(["name", "v"], [T.STRING(), T.DOUBLE()]), [Row(name="a", v=1.5)], ["+I[a, 1.5]"]),
        (T.ROW([T.STRING(), T.FLOAT()]), [Row("a", 0.1)], ["+I[a, 0.1]"]),
        (T.ROW([T.STRING(), T.INT(), T.DOUBLE()]), [Row("w", 1, 0.1)], ["+I[w, 1, 0.1]"]),
        (T.FLOAT(), [0.1, 1e7, 1.5e-5, 110.1, 0.1 * 3], ["0.1", "1.0E7", "1.5E-5", "110.1", "0.3"]),
        (T.DOUBLE(), [0.1, 1e-5, 1e7, 1e21, -0.0, 0.1 * 3],
         ["0.1", "1.0E-5", "1.0E7", "1.0E21", "-0.0", "0.30000000000000004"]),
        (T.BOOLEAN(), [True, False], ["true", "false"]),
        (T.MAP(T.STRING(), T.INT()), [{"a": 1, "b": 2}], ["{a=1, b=2}"]),
        (T.MAP(T.STRING(), T.DOUBLE()), [{"a": 1, "b": 0.5}], ["{a=1.0, b=0.5}"]),
        (T.LIST(T.DOUBLE()), [[1, 0.1]], ["[1.0, 0.1]"]),
        (T.LIST(T.STRING()), [["a", "1"]], ["[a, 1]"]),
        (None, [("t", 1, 0.1), "s1"], ["('t', 1, 0.1)", "s1"]),
    ]
    for n, (type_info, records, lines) in enumerate(cases):
        sink = row_sink(tmp_path / str(n)).of_record_type(type_info)
        files, _ = write_partition(sink, UID, "tok", [as_declared(r, type_info) for r in records])
        commit(files)
        assert visible(tmp_path / str(n)) == {f"part-{UID}-0": lines}, type_info
    untyped = row_sink(tmp_path / "u")
    assert untyped.of_record_type(T.INT()).encoder.record_type == T.INT()
    assert untyped.encoder.record_type is None  # the sink itself is not changed
