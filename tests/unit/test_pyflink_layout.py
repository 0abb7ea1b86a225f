"""``sessioncluster.pyflink`` mirrors the modules PyFlink programs import, and the import hook
of ``sessioncluster run`` gives them as ``pyflink...`` to the program only.

REQUIRED lists every ``from pyflink.X import Y`` of PyFlink's DataStream documentation that
sessioncluster must resolve; a name whose defining module is not merged yet is an expected
failure (xfail) until it is, then it must pass.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import sessioncluster.client.run as run
from sessioncluster.client.run import pyflink_alias

FUNCTIONS = ["RuntimeContext", "MapFunction", "FlatMapFunction", "FilterFunction", "ReduceFunction",
             "KeySelector", "ProcessFunction", "KeyedProcessFunction", "CoMapFunction",
             "CoFlatMapFunction", "CoProcessFunction", "KeyedCoProcessFunction", "AggregateFunction",
             "WindowFunction", "AllWindowFunction", "ProcessWindowFunction", "ProcessAllWindowFunction",
             "AsyncFunction", "AsyncRetryStrategy", "AsyncRetryPredicate"]

REQUIRED: dict[str, list[str]] = {
    "pyflink.common": ["Types", "Row", "RowKind", "Time", "Duration", "Encoder", "WatermarkStrategy",
                       "Configuration", "TypeInformation", "SimpleStringSchema", "ExecutionConfig",
                       "RestartStrategies", "JobExecutionResult", "JobClient"],
    "pyflink.common.typeinfo": ["Types", "TypeInformation", "RowTypeInfo", "TupleTypeInfo"],
    "pyflink.common.types": ["Row", "RowKind"],
    "pyflink.common.time": ["Duration", "Time"],
    "pyflink.common.configuration": ["Configuration"],
    "pyflink.common.watermark_strategy": ["WatermarkStrategy", "TimestampAssigner"],
    "pyflink.common.serialization": ["Encoder", "SimpleStringSchema"],
    "pyflink.common.restart_strategy": ["RestartStrategies"],
    "pyflink.datastream": ["StreamExecutionEnvironment", "RuntimeExecutionMode", "DataStream",
                           "KeyedStream", "WindowedStream", "ConnectedStreams", "OutputTag",
                           "TimeCharacteristic", "TimeDomain", "TimerService", "AsyncDataStream",
                           *FUNCTIONS],
    "pyflink.datastream.functions": FUNCTIONS,
    "pyflink.datastream.state": ["ValueStateDescriptor", "ListStateDescriptor", "MapStateDescriptor",
                                 "ReducingStateDescriptor", "AggregatingStateDescriptor",
                                 "StateTtlConfig", "ValueState", "ListState", "MapState",
                                 "ReducingState", "AggregatingState"],
    "pyflink.datastream.window": ["TumblingEventTimeWindows", "SlidingEventTimeWindows",
                                  "EventTimeSessionWindows", "TumblingProcessingTimeWindows",
                                  "SlidingProcessingTimeWindows", "ProcessingTimeSessionWindows",
                                  "GlobalWindows", "TimeWindow", "CountWindow",
                                  "SessionWindowTimeGapExtractor", "CountTumblingWindowAssigner",
                                  "CountSlidingWindowAssigner", "Trigger", "CountTrigger"],
    "pyflink.datastream.output_tag": ["OutputTag"],
    "pyflink.datastream.execution_mode": ["RuntimeExecutionMode"],
    "pyflink.datastream.connectors": ["FileSource", "FileSink"],
    "pyflink.datastream.connectors.file_system": ["FileSource", "StreamFormat", "FileSink",
                                                  "OutputFileConfig", "RollingPolicy",
                                                  "BucketAssigner", "BulkFormat"],
    "pyflink.datastream.formats.csv": ["CsvSchema", "CsvReaderFormat", "CsvBulkWriters"],
    "pyflink.datastream.formats.json": ["JsonRowSerializationSchema", "JsonRowDeserializationSchema"],
    "pyflink.datastream.formats.parquet": ["ParquetColumnarRowInputFormat", "ParquetBulkWriters",
                                           "AvroParquetReaders", "AvroParquetWriters"],
    "pyflink.datastream.formats.avro": ["AvroSchema", "AvroInputFormat", "AvroWriters"],
    "pyflink.datastream.formats.orc": ["OrcBulkWriters"],
    "pyflink.datastream.async_data_stream": ["AsyncDataStream"],
    "pyflink.datastream.async_retry_predicates": ["empty_result_predicate",
                                                  "has_exception_predicate",
                                                  "exception_type_predicate"],
    "pyflink.datastream.async_retry_strategies": ["NO_RETRY_STRATEGY", "NoRetryStrategy",
                                                  "FixedDelayRetryStrategy", "RetryPredicate",
                                                  "ExponentialBackoffDelayRetryStrategy"],
    "pyflink.table": ["DataTypes", "Row"],
    "pyflink.table.types": ["DataTypes", "DataType", "RowType", "RowField"],
    "pyflink.table.expression": ["JsonType", "JsonExistsOnError", "JsonValueOnEmptyOrError",
                                 "JsonQueryWrapper", "JsonQueryOnEmptyOrError", "JsonOnNull"],
    "pyflink.table.expressions": ["json_string", "json_object", "json_array"],
}


def _mirror(module: str) -> Any:
    return importlib.import_module("sessioncluster." + module)


def _cases() -> list[Any]:
    cases = []
    for module, names in REQUIRED.items():
        for name in names:
            cases.append(pytest.param(module, name, id=f"{module}.{name}"))
    return cases


@pytest.mark.parametrize("module,name", _cases())
def test_name_resolves(module: str, name: str) -> None:
    value = getattr(_mirror(module), name)
    assert value is not None
    # the class lives in a sessioncluster module (so it pickles by reference to the TaskManagers)
    if isinstance(value, type):
        assert value.__module__.startswith("sessioncluster."), value.__module__


def test_every_mirror_module_imports_and_lists_its_names() -> None:
    for module in REQUIRED:
        mod = _mirror(module)
        assert set(REQUIRED[module]) <= set(dir(mod)), module


def test_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(ImportError, match="cannot import name"):
        exec("from sessioncluster.pyflink.datastream import NoSuchThing", {})


# -- the import hook ----------------------------------------------------------------------------

def _real_pyflink_installed() -> bool:
    with pyflink_alias():
        pass
    return importlib.util.find_spec("pyflink") is not None


def test_alias_resolves_pyflink_imports_to_the_mirror() -> None:
    with pyflink_alias():
        from pyflink.common import Types  # type: ignore[import-not-found]
        from pyflink.datastream import StreamExecutionEnvironment  # type: ignore[import-not-found]
        from pyflink.datastream.connectors.file_system import FileSink  # type: ignore[import-not-found]

        import sessioncluster
        from sessioncluster.common.typeinfo import Types as OurTypes
        from sessioncluster.api.connectors.file_system import FileSink as OurFileSink

        assert Types is OurTypes and FileSink is OurFileSink
        assert StreamExecutionEnvironment is sessioncluster.StreamExecutionEnvironment
        assert sys.modules["pyflink.datastream"] is sys.modules["sessioncluster.pyflink.datastream"]
        with pytest.raises(ModuleNotFoundError, match="DataStream API"):
            importlib.import_module("pyflink.ml")


@pytest.mark.skipif("importlib.util.find_spec('pyflink') is not None",
                    reason="a real PyFlink is installed")
def test_alias_does_not_leak_in_process() -> None:
    with pyflink_alias():
        importlib.import_module("pyflink.datastream.window")
    assert not any(n == "pyflink" or n.startswith("pyflink.") for n in sys.modules)
    assert not any(isinstance(f, run.PyFlinkAliasFinder) for f in sys.meta_path)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pyflink")


@pytest.mark.skipif("importlib.util.find_spec('pyflink') is not None",
                    reason="a real PyFlink is installed")
def test_no_pyflink_in_a_fresh_process() -> None:
    code = ("import sessioncluster, sessioncluster.pyflink.datastream, sessioncluster.client.run\n"
            "try:\n    import pyflink\nexcept ModuleNotFoundError:\n    print('absent')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "absent"


# -- the runner without a cluster ---------------------------------------------------------------

@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's session stand-in: programs here build nothing that needs a cluster."""
    monkeypatch.setattr(run, "_session", lambda name: object())


def _program(tmp_path: Path, text: str) -> str:
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_runner_runs_main_with_argv(tmp_path: Path, no_cluster: None, capsys: Any) -> None:
    program = _program(tmp_path, """
        import sys
        from pyflink.common import Row
        from pyflink.datastream import StreamExecutionEnvironment
        print(__name__, sys.argv[1:], Row(a=1))
        env = StreamExecutionEnvironment.get_execution_environment()
        print(type(env).__name__)
        """)
    assert run.run_program(program, ["--input", "x"]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "__main__ ['--input', 'x'] Row(a=1)"
    assert out[1] == "RunStreamExecutionEnvironment"
    assert "pyflink" not in sys.modules


def test_runner_exit_status_and_traceback(tmp_path: Path, no_cluster: None, capsys: Any) -> None:
    assert run.run_program(_program(tmp_path, "import sys\nsys.exit(3)\n")) == 3
    assert run.run_program(_program(tmp_path, "import sys\nsys.exit()\n")) == 0
    program = _program(tmp_path, """
        def word_count():
            raise ValueError("bad input file")

        word_count()
        """)
    assert run.run_program(program) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert f'File "{os.path.abspath(program)}", line 5' in err and "in word_count" in err
    assert "ValueError: bad input file" in err
    assert "runpy" not in err and "run_program" not in err


def test_runner_rejects_missing_program(no_cluster: None) -> None:
    with pytest.raises(run.ProgramError, match="no program file"):
        run.run_program("/nonexistent/program.py")


def test_runner_needs_a_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONCLUSTER_SESSION", raising=False)
    with pytest.raises(run.ProgramError, match="--session NAME"):
        run.run_program(_program(tmp_path, "pass\n"))
