"""``sessioncluster run``: PyFlink programs, unchanged, on the shared session.

Each program runs as ``python -m sessioncluster run --session NAME program.py [args]`` in a
subprocess (SESSIONCLUSTER_HOME inherited) and its printed records are compared with the same
computation in plain Python, or with the hand-worked ``.expected`` file of the programs in
``tests/pyflink_programs``.
"""

from __future__ import annotations

import ast
import collections
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterable

import pytest

import sessioncluster
from sessioncluster.graph.lifecycle import JobStatus

pytestmark = pytest.mark.integration

PROGRAMS = Path(__file__).resolve().parent.parent / "pyflink_programs"
#: a real text (skip when the machine has none)
TEXT = Path("/usr/share/common-licenses/Apache-2.0")
#: a wedged program fails its test instead of hanging the run (not a performance bound)
RUN_TIMEOUT = 300.0
#: lines of Flink's CLI and of the programs that are no records
NOT_RECORDS = ("Job has been submitted with JobID", "Job with JobID", "Job Runtime:", "Executing ",
               "Printing result", "Use --")


# -- helpers ------------------------------------------------------------------------------------

def run(session: sessioncluster.Session, program: Path | str, *args: str,
        detached: bool = False, properties: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "sessioncluster", "run", "--session", session.info.name]
    if detached:
        cmd.append("-d")
    cmd += [f"-D{p}" for p in properties]
    return subprocess.run([*cmd, str(program), *args], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=dict(os.environ))


def parse_record(line: str, arity: int | None = None) -> tuple[str, ...]:
    """A printed record as a tuple of field texts: Python's ``('a', 1)``, Flink's Java-style
    ``(a,1)`` and ``+I[a, 1]`` all give ``('a', '1')`` (after print()'s ``N> `` subtask prefix)."""
    line = re.sub(r"^\d+> ", "", line)
    # Java's text has no ", " between fields (a word has no space): ("a",1) is the word "a"
    java = line.startswith("(") and ", " not in line
    try:
        value = None if java else ast.literal_eval(line)
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, tuple):
        return tuple(str(v) for v in value)
    m = re.fullmatch(r"\((.*)\)|[+-][IUD]\[(.*)\]", line)
    if m is None:
        raise AssertionError(f"not a record: {line!r}")
    inner, sep = (m.group(1), ",") if m.group(1) is not None else (m.group(2), ", ")
    if arity is None:
        return tuple(inner.split(sep))
    head, *rest = inner.rsplit(sep, arity - 1)  # the first field may hold commas (words do)
    return (head, *rest)


def records(stdout: str, arity: int | None = None) -> collections.Counter[tuple[str, ...]]:
    lines = [ln.strip() for ln in stdout.splitlines()]
    return collections.Counter(parse_record(ln, arity) for ln in lines
                               if ln and not ln.startswith(NOT_RECORDS))


def expected_of(name: str) -> collections.Counter[tuple[str, ...]]:
    lines = (PROGRAMS / f"{name}.expected").read_text().splitlines()
    return collections.Counter(tuple(str(v) for v in ast.literal_eval(ln))
                               for ln in lines if ln.strip() and not ln.startswith("#"))


def plain_word_count(text: str) -> collections.Counter[tuple[str, ...]]:
    counts = collections.Counter(w for line in text.splitlines() for w in line.split())
    return collections.Counter({(w, str(n)): 1 for w, n in counts.items()})


def job_ids(stdout: str) -> list[str]:
    return re.findall(r"^Job has been submitted with JobID (\S+)$", stdout, re.M)


def wait_finished(session: sessioncluster.Session, job_id: str) -> JobStatus:
    deadline = time.monotonic() + RUN_TIMEOUT
    client = session.job(job_id)
    while time.monotonic() < deadline:
        status = client.get_job_status()
        if status.is_globally_terminal:
            return status
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not end")


def program(tmp_path: Path, text: str, name: str = "program.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def part_lines(directory: Path) -> list[str]:
    files = [p for p in directory.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
    assert files, f"the FileSink wrote nothing under {directory}"
    return [ln for p in files for ln in p.read_text().splitlines()]


#: a word count as PyFlink's tutorial writes it, on lines read in the program (no FileSource, no
#: type information): runs before any other branch is merged
COLLECTION_WORD_COUNT = """
    import sys
    from pyflink.common import Encoder
    from pyflink.datastream import StreamExecutionEnvironment, RuntimeExecutionMode
    from pyflink.datastream.connectors.file_system import FileSink, OutputFileConfig

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    with open(sys.argv[1]) as f:
        lines = f.read().splitlines()

    def split(line):
        yield from line.split()

    ds = env.from_collection(lines).flat_map(split).map(lambda w: (w, 1)) \\
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    if len(sys.argv) > 2:
        ds.sink_to(FileSink.for_row_format(sys.argv[2], Encoder.simple_string_encoder())
                   .with_output_file_config(OutputFileConfig.builder().with_part_prefix("wc").build())
                   .build())
    else:
        ds.print()
    result = env.execute("collection word count")
    print("Result job id:", result.get_job_id(), file=sys.stderr)
    """


@pytest.fixture(scope="module")
def text() -> str:
    if not TEXT.is_file():
        pytest.skip(f"no real text at {TEXT}")
    return TEXT.read_text()


# -- tests --------------------------------------------------------------------------------------

def test_word_count_print(session: sessioncluster.Session, tmp_path: Path, text: str) -> None:
    out = run(session, program(tmp_path, COLLECTION_WORD_COUNT), str(TEXT))
    assert out.returncode == 0, out.stderr
    ids = job_ids(out.stdout)
    assert len(ids) == 1 and f"Result job id: {ids[0]}" in out.stderr
    assert f"Job with JobID {ids[0]} has finished." in out.stdout
    assert records(out.stdout, arity=2) == plain_word_count(text)


def test_detached_prints_the_job_id_and_returns(session: sessioncluster.Session, tmp_path: Path,
                                                text: str) -> None:
    target = tmp_path / "counts"
    out = run(session, program(tmp_path, COLLECTION_WORD_COUNT), str(TEXT), str(target),
              detached=True)
    assert out.returncode == 0, out.stderr
    (job_id,) = job_ids(out.stdout)
    assert "has finished" not in out.stdout  # it did not wait
    assert wait_finished(session, job_id) is JobStatus.FINISHED
    got = collections.Counter(parse_record(ln, 2) for ln in part_lines(target))
    assert got == plain_word_count(text)


def test_failing_program_exits_1_with_its_traceback(session: sessioncluster.Session,
                                                    tmp_path: Path) -> None:
    path = program(tmp_path, """
        from pyflink.datastream import StreamExecutionEnvironment

        def check(args):
            raise ValueError(f"bad arguments: {args}")

        env = StreamExecutionEnvironment.get_execution_environment()
        check(["--nope"])
        """)
    out = run(session, path)
    assert out.returncode == 1
    assert "Traceback (most recent call last):" in out.stderr
    assert f'File "{path}", line 8' in out.stderr and "in check" in out.stderr
    assert "ValueError: bad arguments: ['--nope']" in out.stderr
    assert "runpy" not in out.stderr


def test_failing_job_exits_1_with_the_user_function_in_the_traceback(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    path = program(tmp_path, """
        from pyflink.datastream import StreamExecutionEnvironment

        def parse(line):
            return int(line)

        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection(["1", "two"]).map(parse).print()
        env.execute("failing")
        """)
    out = run(session, path)
    assert out.returncode == 1
    assert "in parse" in out.stderr and "invalid literal for int()" in out.stderr
    assert len(job_ids(out.stdout)) == 1


def test_a_streaming_program_with_bounded_sources_finishes(session: sessioncluster.Session,
                                                           tmp_path: Path) -> None:
    """STREAMING mode over a bounded collection: a keyed sum prints every update (Flink's
    STREAMING semantics, unlike BATCH's final value), and the job FINISHES."""
    path = program(tmp_path, """
        from pyflink.datastream import StreamExecutionEnvironment, RuntimeExecutionMode
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.from_collection([("a", 1), ("b", 2), ("a", 3)]).key_by(lambda t: t[0]).sum(1).print()
        env.execute("streaming sum")
        """)
    out = run(session, path)
    assert out.returncode == 0, out.stderr
    # print()'s "N> " subtask prefix at the session's default parallelism, as Flink's
    lines = [re.sub(r"^\d+> ", "", line) for line in out.stdout.splitlines()]
    assert sorted(line for line in lines if line.startswith("(")) == \
        ["('a', 1)", "('a', 4)", "('b', 2)"]
    assert len(job_ids(out.stdout)) == 1 and "has finished" in out.stdout


def test_session_from_the_environment_variable(session: sessioncluster.Session,
                                               tmp_path: Path) -> None:
    path = program(tmp_path, """
        from pyflink.common import Row
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.functions import MapFunction

        class Times(MapFunction):  # a class of the program's own, shipped by value
            def __init__(self, factor):
                self.factor = factor

            def map(self, value):
                return Row(n=value * self.factor)

        env = StreamExecutionEnvironment.get_execution_environment()
        rows = env.from_collection([3, 1, 2]).map(Times(10)).execute_and_collect()
        print(sorted(r.n for r in rows), all(isinstance(r, Row) for r in rows))
        """)
    out = subprocess.run([sys.executable, "-m", "sessioncluster", "run", str(path)],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT,
                         env={**os.environ, "SESSIONCLUSTER_SESSION": session.info.name})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[10, 20, 30] True"


def test_unknown_session_is_a_clear_error(session: sessioncluster.Session, tmp_path: Path) -> None:
    path = program(tmp_path, "print('never')\n")
    out = subprocess.run([sys.executable, "-m", "sessioncluster", "run", "--session", "nosuch",
                          str(path)], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert out.returncode == 1 and "never" not in out.stdout
    assert "no session cluster named 'nosuch'" in out.stderr


@pytest.mark.parametrize("name", ["word_count", "word_count_untyped"])
def test_tutorial_word_count_file_source_and_print(session: sessioncluster.Session, text: str,
                                                   name: str) -> None:
    out = run(session, PROGRAMS / f"{name}.py", "--input", str(TEXT))
    assert out.returncode == 0, out.stderr
    assert records(out.stdout, arity=2) == plain_word_count(text)


def test_tutorial_word_count_file_sink(session: sessioncluster.Session, tmp_path: Path,
                                       text: str) -> None:
    target = tmp_path / "out"
    out = run(session, PROGRAMS / "word_count.py", "--input", str(TEXT), "--output", str(target))
    assert out.returncode == 0, out.stderr
    got = collections.Counter(parse_record(ln, 2) for ln in part_lines(target))
    assert got == plain_word_count(text)


DOC_PROGRAMS = [
    "word_count",
    "word_count_untyped",
    "state_value_flat_map",
    "state_keyed_process",
    "event_time_timer",
    "window_tumbling",
    "window_sliding",
    "window_session",
    "window_count",
    "rows_reduce",
    "window_continuous_trigger",
]


def test_every_program_is_listed() -> None:
    """Every DataStream program (the Table API and SQL ones, ``table_*``/``sql_*``, and
    PyFlink's own table examples, ``example_*``, are
    test_table_programs.py's)."""
    def datastream(paths: Iterable[Path]) -> set[str]:
        return {p.stem for p in paths if not p.stem.startswith(("table_", "sql_", "example_"))}

    assert datastream(PROGRAMS.glob("*.py")) == set(DOC_PROGRAMS)
    assert datastream(PROGRAMS.glob("*.expected")) == set(DOC_PROGRAMS)


@pytest.mark.parametrize("name", DOC_PROGRAMS)
def test_documentation_program(session: sessioncluster.Session, name: str) -> None:
    """Each program as ``flink run`` runs it: in STREAMING mode, Flink's default, unless the
    program sets a mode (the word counts set BATCH)."""
    out = run(session, PROGRAMS / f"{name}.py")
    assert out.returncode == 0, out.stderr
    expected = expected_of(name)
    arity = len(next(iter(expected)))
    assert records(out.stdout, arity) == expected
    job_id, = job_ids(out.stdout)
    streaming = session.job(job_id).details().streaming is not None
    assert streaming is (not name.startswith("word_count")), "not Flink's default runtime mode"


#: programs whose records are the same in BATCH mode (a running reduce emits only its final
#: value per key there)
SAME_IN_BATCH = [n for n in DOC_PROGRAMS if not n.startswith("word_count") and n != "rows_reduce"]


@pytest.mark.parametrize("name", SAME_IN_BATCH)
def test_documentation_program_in_batch_mode(session: sessioncluster.Session, name: str) -> None:
    """The same programs with ``-Dexecution.runtime-mode=BATCH``: the same records, since in
    STREAMING mode a bounded input ends with Flink's final watermark, which fires the windows and
    event-time timers still pending, as BATCH mode fires them at the end."""
    out = run(session, PROGRAMS / f"{name}.py", properties=("execution.runtime-mode=BATCH",))
    assert out.returncode == 0, out.stderr
    expected = expected_of(name)
    assert records(out.stdout, len(next(iter(expected)))) == expected
    job_id, = job_ids(out.stdout)
    assert session.job(job_id).details().streaming is None, "the job did not run in BATCH mode"


def test_a_property_that_is_no_key_value_pair_is_a_clear_error(session: sessioncluster.Session,
                                                               tmp_path: Path) -> None:
    out = run(session, program(tmp_path, "print('never')\n"), properties=("execution.runtime-mode",))
    assert out.returncode == 1 and "never" not in out.stdout
    assert "-Dkey=value" in out.stderr
