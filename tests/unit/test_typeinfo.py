"""PyFlink's Types, Row, Configuration, RuntimeExecutionMode and the environment settings
that need no cluster (runtime mode, configure, get_config, from_source, sink_to)."""

from __future__ import annotations

import os
import pickle
import types
from typing import Any

import cloudpickle
import pytest

from sessioncluster.api.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from sessioncluster.client.current import (
    NoCurrentSessionError,
    clear_current,
    current,
    current_or_connect,
    set_current,
)
from sessioncluster.client.environment import ContextStreamExecutionEnvironment, StreamExecutionEnvironment
from sessioncluster.common import Configuration, Duration, Encoder, Row, RowKind, RuntimeExecutionMode, Types
from sessioncluster.common.typeinfo import RowTypeInfo, TupleTypeInfo
from sessioncluster.graph.streamgraph import OperatorKind

# -- Types ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "STRING", "INT", "LONG", "FLOAT", "DOUBLE", "BOOLEAN", "BYTE", "SHORT", "CHAR", "BIG_INT",
    "BIG_DEC", "SQL_DATE", "SQL_TIME", "SQL_TIMESTAMP", "PICKLED_BYTE_ARRAY", "INSTANT"])
def test_basic_types_are_equal_values(name: str) -> None:
    t = getattr(Types, name)()
    assert t == getattr(Types, name)()
    assert hash(t) == hash(getattr(Types, name)())
    assert repr(t)
    assert pickle.loads(pickle.dumps(t)) == t


def test_distinct_types_differ() -> None:
    assert Types.INT() != Types.LONG()
    assert Types.STRING() != Types.CHAR()
    assert Types.INT() != "Integer"


def test_composite_types() -> None:
    t = Types.TUPLE([Types.STRING(), Types.INT()])
    assert isinstance(t, TupleTypeInfo) and t.get_arity() == 2
    assert t == Types.TUPLE([Types.STRING(), Types.INT()])
    assert t != Types.TUPLE([Types.INT(), Types.STRING()])
    row = Types.ROW([Types.STRING(), Types.INT()])
    assert isinstance(row, RowTypeInfo) and row.get_field_names() == ["f0", "f1"]
    named = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.LONG()])
    assert named.get_field_names() == ["word", "count"]
    assert named.get_field_index("count") == 1
    assert named != row
    assert repr(named) == "RowTypeInfo(word: String, count: Long)"
    assert Types.LIST(Types.INT()) == Types.LIST(Types.INT())
    assert Types.MAP(Types.STRING(), Types.INT()) != Types.MAP(Types.INT(), Types.STRING())
    assert Types.BASIC_ARRAY(Types.INT()) != Types.PRIMITIVE_ARRAY(Types.INT())
    assert Types.OBJECT_ARRAY(Types.STRING()) == Types.OBJECT_ARRAY(Types.STRING())


def test_bad_types_are_rejected() -> None:
    with pytest.raises(TypeError, match="TypeInformation"):
        Types.TUPLE([str, int])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Types.LIST("int")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="as many names"):
        Types.ROW_NAMED(["a"], [Types.INT(), Types.INT()])


# -- Row --------------------------------------------------------------------------------------

def test_row_positional_and_named() -> None:
    r = Row(1, "a")
    assert r[0] == 1 and r[1] == "a" and len(r) == 2 and list(r) == [1, "a"]
    assert repr(r) == "<Row(1, 'a')>"  # PyFlink's repr of a Row without field names
    n = Row(name="a", n=1)  # field order as given
    assert repr(n) == "Row(name='a', n=1)"
    assert n.name == "a" and n["n"] == 1 and n[0] == "a"
    assert n.as_dict() == {"name": "a", "n": 1}
    assert "name" in n and "missing" not in n
    with pytest.raises(AttributeError):
        _ = n.missing
    with pytest.raises(TypeError, match="Cannot convert"):
        r.as_dict()
    with pytest.raises(ValueError, match="both args and kwargs"):
        Row(1, a=2)


def test_row_factory() -> None:
    person = Row("name", "age")
    alice = person("Alice", 11)
    assert alice == Row(name="Alice", age=11)
    assert alice.age == 11 and alice.as_dict() == {"name": "Alice", "age": 11}


def test_row_equality_is_pyflinks() -> None:
    assert Row(1, "a") == Row(1, "a")
    assert Row(1, "a") != (1, "a")  # a Row is no tuple
    assert Row(a=1, b=2) == Row(b=2, a=1)  # named rows compare by name
    assert Row(1, 2) != Row(a=1, b=2)
    deleted = Row(1, "a")
    deleted.set_row_kind(RowKind.DELETE)
    assert deleted.get_row_kind() is RowKind.DELETE and deleted != Row(1, "a")
    assert Row(1, "a").get_row_kind() is RowKind.INSERT
    assert str(RowKind.UPDATE_BEFORE) == "-U"
    assert hash(Row(a=1, b=2)) == hash(Row(b=2, a=1))


def test_row_is_read_only_but_items_can_be_set() -> None:
    r = Row(name="a", n=1)
    r["n"] = 5
    r[0] = "b"
    assert r == Row(name="b", n=5)
    with pytest.raises(RuntimeError, match="read-only"):
        r.n = 3  # type: ignore[misc]


def test_row_nested_as_dict_and_pickle() -> None:
    r = Row(id=1, inner=Row(x=[Row(y=2)]))
    assert r.as_dict(recursive=True) == {"id": 1, "inner": {"x": [{"y": 2}]}}
    r.set_row_kind(RowKind.UPDATE_AFTER)
    for dumps in (pickle.dumps, cloudpickle.dumps):
        back = pickle.loads(dumps(r))
        assert back == r and back.get_row_kind() is RowKind.UPDATE_AFTER and back.id == 1


# -- Configuration ------------------------------------------------------------------------------

def test_configuration() -> None:
    c = Configuration()
    c.set_string("pipeline.name", "wc").set_integer("parallelism.default", 4)
    c.set_boolean("pipeline.operator-chaining", False).set_float("x.ratio", 0.5)
    assert c.get_string("pipeline.name", "") == "wc"
    assert c.get_integer("parallelism.default", 1) == 4
    assert c.get_boolean("pipeline.operator-chaining", True) is False
    assert c.get_float("x.ratio", 0.0) == 0.5
    assert c.get_integer("missing", 7) == 7
    assert c.to_dict() == {"pipeline.name": "wc", "parallelism.default": "4",
                           "pipeline.operator-chaining": "false", "x.ratio": "0.5"}
    assert c.contains_key("pipeline.name") and "x.ratio" in c.key_set()
    copy = Configuration(c)
    assert copy == c
    assert c.remove_config("x.ratio") and not c.contains_key("x.ratio")
    with pytest.raises(ValueError, match="not a int"):
        c.get_integer("pipeline.name", 0)
    with pytest.raises(ValueError, match="boolean"):
        c.get_boolean("pipeline.name", False)


def test_runtime_execution_mode() -> None:
    assert {m.name for m in RuntimeExecutionMode} == {"BATCH", "STREAMING", "AUTOMATIC"}
    assert RuntimeExecutionMode.parse("batch") is RuntimeExecutionMode.BATCH
    with pytest.raises(ValueError, match="STREAMING, BATCH or AUTOMATIC"):
        RuntimeExecutionMode.parse("micro-batch")


# -- the environment without a cluster ---------------------------------------------------------

class _NoCluster:
    """A stand-in session: building programs needs none; submitting one is a test failure."""

    name = "none"
    #: the session's parallelism.default (its connection info's)
    info = types.SimpleNamespace(parallelism=3, jobmanager_pid=os.getpid())

    def submit(self, *args: Any) -> str:
        raise AssertionError("the program was submitted")


def _env() -> StreamExecutionEnvironment:
    return ContextStreamExecutionEnvironment(_NoCluster())  # type: ignore[arg-type]


def test_runtime_mode_batch_is_default_and_streaming_goes_into_the_job_graph() -> None:
    env = _env()
    assert env.get_runtime_mode() is RuntimeExecutionMode.BATCH
    env.from_collection([1]).print()
    assert env.job_graph("b")[0].runtime_mode is RuntimeExecutionMode.BATCH
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.enable_checkpointing(500)
    env.get_checkpoint_config().set_checkpoint_storage_dir("/tmp/ckpt")
    graph = env.job_graph("s")[0]
    assert graph.runtime_mode is RuntimeExecutionMode.STREAMING
    assert graph.configuration == {"execution.checkpointing.interval": 500,
                                   "state.checkpoints.dir": "/tmp/ckpt"}
    with pytest.raises(TypeError):
        env.set_runtime_mode("BATCH")


def test_configure_and_get_config() -> None:
    env = _env()
    conf = Configuration().set_integer("parallelism.default", 3).set_string("execution.runtime-mode",
                                                                             "STREAMING")
    env.configure(conf)
    assert env.get_parallelism() == 3 and env.get_config().get_parallelism() == 3
    assert env.get_runtime_mode() is RuntimeExecutionMode.STREAMING
    cfg = env.get_config()
    assert cfg is env.get_config()
    cfg.set_parallelism(2)
    assert env.get_parallelism() == 2
    assert not cfg.is_object_reuse_enabled() and cfg.enable_object_reuse().is_object_reuse_enabled()
    cfg.set_global_job_parameters({"input": "x"})
    assert cfg.get_global_job_parameters() == {"input": "x"}


def test_from_source_and_sink_to_build_the_text_nodes(tmp_path: Any) -> None:
    env = _env()
    a, b = tmp_path / "a.txt", tmp_path / "more"
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(a), str(b)).build()
    assert source.bounded
    ds = env.from_source(source, None, "file_source")
    assert ds.node.kind is OperatorKind.SOURCE_TEXT_FILE and ds.node.name == "file_source"
    assert ds.node.config["path"] == f"{a},{b}"
    sink = (FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("prefix")
                                     .with_part_suffix(".ext").build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy())
            .build())
    assert sink.output_file_config.get_part_prefix() == "prefix"
    ds.map(str.upper).sink_to(sink)
    env.from_collection([1], type_info=Types.INT()).sink_to(sink)
    sinks = [n for n in env.stream_graph.nodes if n.kind is OperatorKind.SINK_TEXT]
    assert [n.config["path"] for n in sinks] == [str(tmp_path / "out")] * 2
    # the encoder learns the declared type of the stream it writes (none for an untyped map)
    assert [n.function.encoder.record_type for n in sinks] == [None, Types.INT()]
    with pytest.raises(TypeError, match="FileSink"):
        ds.sink_to("out")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="FileSource"):
        env.from_source("in.txt", None, "src")


def test_file_sink_base_path_may_exist_but_not_be_a_file(tmp_path: Any) -> None:
    def sink(path: Any) -> FileSink:
        return FileSink.for_row_format(str(path), Encoder.simple_string_encoder()).build()

    full = tmp_path / "full"
    full.mkdir()
    (full / "part-00000").write_text("x\n")
    _env().from_collection([1]).sink_to(sink(full))  # written on into, as Flink does
    assert (full / "part-00000").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="is a file"):
        _env().from_collection([1]).sink_to(sink(tmp_path / "file"))


def test_unbounded_file_source_fails_at_execute_in_batch_mode(tmp_path: Any) -> None:
    env = _env()
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
              .monitor_continuously(Duration.of_seconds(1)).build())
    assert not source.bounded
    env.from_source(source, None, "watched").print()
    with pytest.raises(ValueError, match="'watched' is unbounded: it needs STREAMING mode"):
        env.execute()


def test_builders_reject_bad_input() -> None:
    with pytest.raises(TypeError, match="StreamFormat"):
        FileSource.for_record_stream_format("text", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one path"):
        FileSource.for_record_stream_format(StreamFormat.text_line_format())
    with pytest.raises(ValueError, match="unknown charset"):
        StreamFormat.text_line_format("no-such-charset")
    with pytest.raises(TypeError, match="Encoder"):
        FileSink.for_row_format("out", "utf-8")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bulk writer factory"):
        FileSink.for_bulk_format("out", object())


# -- the current session ------------------------------------------------------------------------

def test_current_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONCLUSTER_SESSION", raising=False)
    before = current()
    clear_current()
    try:
        with pytest.raises(NoCurrentSessionError, match="sessioncluster start --name NAME"):
            StreamExecutionEnvironment.get_execution_environment()
        s = _NoCluster()
        set_current(s)  # type: ignore[arg-type]
        assert current_or_connect() is s
        # without a setting the session's parallelism.default, as a Flink cluster's
        assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == 3
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration().set_integer("parallelism.default", 2))
        assert env.session is s and env.get_parallelism() == 2
        clear_current(_NoCluster())  # type: ignore[arg-type]  # not the current one: kept
        assert current() is s
        clear_current(s)  # type: ignore[arg-type]
        assert current() is None
    finally:
        clear_current()
        if before is not None:
            set_current(before)


def test_session_from_environment_variable_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("SESSIONCLUSTER_HOME", str(tmp_path))
    monkeypatch.setenv("SESSIONCLUSTER_SESSION", "nosuchsession")
    before = current()
    clear_current()
    try:
        with pytest.raises(NoCurrentSessionError, match="SESSIONCLUSTER_SESSION=nosuchsession"):
            StreamExecutionEnvironment.get_execution_environment()
    finally:
        if before is not None:
            set_current(before)


def test_a_stopped_current_session_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys
    from types import SimpleNamespace

    monkeypatch.delenv("SESSIONCLUSTER_SESSION", raising=False)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stopped = _NoCluster()
    stopped.info = SimpleNamespace(jobmanager_pid=int(gone.stdout))  # type: ignore[attr-defined]
    before = current()
    set_current(stopped)  # type: ignore[arg-type]
    try:
        with pytest.raises(NoCurrentSessionError):
            current_or_connect()
        assert current() is None
    finally:
        clear_current()
        if before is not None:
            set_current(before)


# -- records as Flink prints them --------------------------------------------------------------

def test_java_string_of_typed_records() -> None:
    """Flink 2.3's print() text per declared type (/work/briefs/data/javaprint/probe_print.out)."""
    import datetime
    from decimal import Decimal

    from sessioncluster.common.typeinfo import java_string

    T = Types
    assert java_string(("hi", 1, 2, 0.1, 1e-5, True), T.TUPLE(
        [T.STRING(), T.INT(), T.LONG(), T.FLOAT(), T.DOUBLE(), T.BOOLEAN()])) == "(hi,1,2,0.1,1.0E-5,true)"
    assert java_string(("a,b", 1), T.TUPLE([T.STRING(), T.INT()])) == "(a,b,1)"
    assert java_string((("a", 1), [1, 2]), T.TUPLE([T.TUPLE([T.STRING(), T.INT()]),
                                                     T.LIST(T.INT())])) == "((a,1),[1, 2])"
    # a ROW: Java's Row.toString (a FileSink: probe_filesink.out); print() maps it in Python
    # first (PyFlink's _align_output_type), fields by Python's str
    from sessioncluster.common.printsink import print_text

    deleted = Row(1, "x")
    deleted.set_row_kind(RowKind.DELETE)
    row_type = T.ROW([T.STRING(), T.INT()])
    assert java_string(deleted, T.ROW([T.INT(), T.STRING()])) == "-D[1, x]"
    assert java_string(Row(None, 2), row_type) == "+I[null, 2]"
    assert java_string(Row("a", 0.10000000149011612), T.ROW([T.STRING(), T.FLOAT()])) == "+I[a, 0.1]"
    assert print_text(deleted, T.ROW([T.INT(), T.STRING()])) == "-D[1,x]"
    assert print_text(Row(None, 2), row_type) == "+I[None,2]"
    assert print_text(("a", 1), T.TUPLE([T.STRING(), T.INT()])) == "(a,1)"
    assert [java_string(x, T.FLOAT()) for x in (0.1, 1e7, 1.5e-5, 100.0, 110.1, 123456.7, 9e-4, 3.4e38,
                                                0.30000000447034836)] == [
        "0.1", "1.0E7", "1.5E-5", "100.0", "110.1", "123456.7", "9.0E-4", "3.4E38", "0.3"]
    assert [java_string(x, T.DOUBLE()) for x in (
        0.1, 1e-5, 1e7, 1.0, 123456789.0, 0.001, 0.0009, -0.0, float("nan"), float("inf"), 1e21,
        12345678.9, 1)] == ["0.1", "1.0E-5", "1.0E7", "1.0", "1.23456789E8", "0.001", "9.0E-4", "-0.0",
                            "NaN", "Infinity", "1.0E21", "1.23456789E7", "1.0"]
    assert java_string(True, T.BOOLEAN()) == "true" and java_string(False, T.BOOLEAN()) == "false"
    assert java_string(2**40, T.LONG()) == "1099511627776"
    assert [java_string(Decimal(d), T.BIG_DEC()) for d in ("1.50", "1E+3")] == ["1.50", "1E+3"]
    assert java_string(datetime.date(2024, 1, 2), T.SQL_DATE()) == "2024-01-02"
    assert java_string(datetime.time(3, 4, 5), T.SQL_TIME()) == "03:04:05"
    assert java_string(datetime.datetime(2024, 1, 2, 3, 4, 5), T.SQL_TIMESTAMP()) == "2024-01-02 03:04:05.0"
    assert java_string(datetime.datetime(2024, 1, 2, 3, 4, 5, 120000), T.SQL_TIMESTAMP()) \
        == "2024-01-02 03:04:05.12"
    assert java_string({"a": 1, "b": 2}, T.MAP(T.STRING(), T.INT())) == "{a=1, b=2}"
    assert java_string({"k": 0.1}, T.MAP(T.STRING(), T.FLOAT())) == "{k=0.1}"
    assert java_string([1, 0.1], T.LIST(T.DOUBLE())) == "[1.0, 0.1]"
    # a Java array prints its class and identity hash
    assert java_string(["a"], T.BASIC_ARRAY(T.STRING())).startswith("[Ljava.lang.String;@")
    assert java_string([1], T.BASIC_ARRAY(T.INT())).startswith("[Ljava.lang.Integer;@")
    assert java_string([1], T.PRIMITIVE_ARRAY(T.INT())).startswith("[I@")
    assert java_string([("a", 1)], T.OBJECT_ARRAY(T.TUPLE([T.STRING(), T.INT()]))).startswith(
        "[Lorg.apache.flink.api.java.tuple.Tuple2;@")
    # no type information: PyFlink pickles the records and prints Python's str
    assert java_string(("a", 5)) == "('a', 5)"
    assert java_string(("a", 5), T.PICKLED_BYTE_ARRAY()) == "('a', 5)"


def test_float32_as_flink_serializes_a_declared_float() -> None:
    """A FLOAT read back from Java: 32 bits (probe_print.out: 0.1 -> 0.10000000149011612)."""
    from sessioncluster.common.typeinfo import as_declared, has_float, to_float32

    T = Types
    assert to_float32(0.1) == 0.10000000149011612 and to_float32(0.1) * 3 == 0.30000000447034836
    assert to_float32(110.1) * 3 == 330.2999954223633
    assert to_float32(1e40) == float("inf")
    assert as_declared(0.1, T.DOUBLE()) == 0.1 and as_declared(0.1, None) == 0.1
    assert as_declared(("a", 0.1), T.TUPLE([T.STRING(), T.FLOAT()])) == ("a", 0.10000000149011612)
    assert as_declared([0.1], T.LIST(T.FLOAT())) == [0.10000000149011612]
    assert as_declared({"k": 0.1}, T.MAP(T.STRING(), T.FLOAT())) == {"k": 0.10000000149011612}
    row = as_declared(Row(name="a", v=0.1), T.ROW_NAMED(["name", "v"], [T.STRING(), T.FLOAT()]))
    assert row.as_dict() == {"name": "a", "v": 0.10000000149011612}
    assert not has_float(T.TUPLE([T.STRING(), T.DOUBLE()])) and has_float(T.LIST(T.FLOAT()))


def test_type_spec_round_trip_and_print_prefix() -> None:
    from sessioncluster.common.printsink import line_formatter, print_prefix
    from sessioncluster.common.typeinfo import from_type_spec, type_spec

    T = Types
    for t in (T.TUPLE([T.STRING(), T.FLOAT()]), T.ROW_NAMED(["a"], [T.LIST(T.INT())]),
              T.MAP(T.STRING(), T.DOUBLE()), T.PRIMITIVE_ARRAY(T.INT()), T.SQL_TIMESTAMP(),
              T.PICKLED_BYTE_ARRAY()):
        assert from_type_spec(type_spec(t)) == t
    assert type_spec(None) is None and from_type_spec(None) is None
    # Flink's PrintSinkOutputWriter (probe_print.out: "ID> a", "ID:1> a", "2> a")
    assert [print_prefix(i, s, p) for i, s, p in ((None, 0, 1), ("ID", 0, 1), ("ID", 0, 2), (None, 1, 2))] \
        == ["", "ID> ", "ID:1> ", "2> "]
    line = line_formatter({"print_type": type_spec(T.TUPLE([T.STRING(), T.INT()]))}, 1, 2)
    assert line(("hi", 4)) == "2> (hi,4)"
    assert line_formatter({}, 0, 1)(("hi", 4)) == "('hi', 4)"


def test_read_back_of_a_declared_float_output() -> None:
    """An operator's output_type FLOAT crossing an exchange (probe_print.out "f32 map float
    keyby map": 0.10000000149011612; chained it stays 0.1, and a DOUBLE is unchanged)."""
    from sessioncluster.common.typeinfo import read_back, type_spec

    convert = read_back(type_spec(Types.TUPLE([Types.STRING(), Types.FLOAT()])))
    assert convert(("a", 0.1)) == ("a", 0.10000000149011612)
    assert read_back(type_spec(Types.FLOAT()), timestamped=True)((7, 0.1)) == (7, 0.10000000149011612)
    assert read_back(type_spec(Types.DOUBLE())) is None and read_back(None) is None
