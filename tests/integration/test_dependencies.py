"""Python dependencies per job on the shared session: files, packages, zips, archives and
requirements reach the tasks through the BlobServer, and each job sees only its own."""

from __future__ import annotations

import base64
import hashlib
import importlib
import uuid
import zipfile
from pathlib import Path

import pytest

import sessioncluster
from sessioncluster.client.jobclient import JobExecutionException

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def run(session: sessioncluster.Session, setup, records, fn) -> list:  # type: ignore[no-untyped-def]
    env = session.get_execution_environment()
    env.set_parallelism(2)
    setup(env)
    return sorted(env.from_collection(records).map(fn).execute_and_collect())


def test_a_module_a_package_and_a_zip(session: sessioncluster.Session, tmp_path: Path) -> None:
    mod, pkg, zipped = unique("depmod"), unique("deppkg"), unique("depzip")
    (tmp_path / f"{mod}.py").write_text("def f(x):\n    return x + 100\n")
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("VALUE = 7\n")
    with zipfile.ZipFile(tmp_path / "lib.zip", "w") as zf:
        zf.writestr(f"{zipped}/__init__.py", "SCALE = 1000\n")

    def setup(env) -> None:  # type: ignore[no-untyped-def]
        env.add_python_file(str(tmp_path / f"{mod}.py"))
        env.add_python_file(str(tmp_path / pkg))
        env.add_python_file(str(tmp_path / "lib.zip"))

    def use(x: int) -> int:
        return (importlib.import_module(mod).f(x) + importlib.import_module(pkg).VALUE
                + importlib.import_module(zipped).SCALE)

    assert run(session, setup, [1, 2, 3], use) == [1108, 1109, 1110]


def test_two_jobs_each_see_their_own_version(session: sessioncluster.Session, tmp_path: Path) -> None:
    name = unique("versioned")
    for version in (1, 2):
        (tmp_path / f"v{version}").mkdir()
        (tmp_path / f"v{version}" / f"{name}.py").write_text(f"VERSION = {version}\n")

    def version_of(_: int) -> int:
        return importlib.import_module(name).VERSION

    for _ in range(2):  # and again, on workers that ran the other version just before
        for version in (1, 2):
            path = str(tmp_path / f"v{version}" / f"{name}.py")
            got = run(session, lambda env, p=path: env.add_python_file(p), list(range(4)), version_of)
            assert got == [version] * 4


def test_an_archive_is_read_by_a_relative_path(session: sessioncluster.Session, tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "dictionary.zip", "w") as zf:
        zf.writestr("words.txt", "alpha\nbeta\ngamma\n")

    def word(i: int) -> str:
        with open("dict/words.txt") as f:
            return f.read().split()[i]

    got = run(session, lambda env: env.add_python_archive(str(tmp_path / "dictionary.zip"), "dict"),
              [0, 2], word)
    assert got == ["alpha", "gamma"]


def write_wheel(directory: Path, dist: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of ``files``, as PEP 427 lays it out (no build tool needed)."""
    info = f"{dist}-0.1.dist-info"
    files = {**files,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    path = directory / f"{dist}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def test_requirements_from_a_local_wheel_directory(session: sessioncluster.Session, tmp_path: Path) -> None:
    dist = unique("tinydist")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_wheel(wheels, dist, {f"{dist}/__init__.py": "def shout(s):\n    return s.upper() + '!'\n"})
    (tmp_path / "requirements.txt").write_text(f"{dist}==0.1\n")

    def shout(s: str) -> str:
        return importlib.import_module(dist).shout(s)

    got = run(session, lambda env: env.set_python_requirements(str(tmp_path / "requirements.txt"),
                                                               str(wheels)), ["a", "b"], shout)
    assert got == ["A!", "B!"]


def test_requirements_pip_cannot_install_fail_the_job_with_pips_message(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("surely-no-such-package-sessioncluster==9.9\n")
    (tmp_path / "wheels").mkdir()
    with pytest.raises(JobExecutionException) as err:
        run(session, lambda env: env.set_python_requirements(str(tmp_path / "requirements.txt"),
                                                             str(tmp_path / "wheels")), [1], lambda x: x)
    assert "pip could not install the requirements of requirements.txt" in str(err.value)
    assert "surely-no-such-package-sessioncluster" in str(err.value)
    # the session goes on
    assert run(session, lambda env: None, [1, 2], lambda x: x * 3) == [3, 6]


def test_a_missing_module_names_the_jobs_dependencies(session: sessioncluster.Session,
                                                      tmp_path: Path) -> None:
    (tmp_path / "helper_mod.py").write_text("X = 1\n")
    missing = unique("not_shipped")

    def use(x: int) -> int:
        return importlib.import_module(missing).X

    with pytest.raises(JobExecutionException) as err:
        run(session, lambda env: env.add_python_file(str(tmp_path / "helper_mod.py")), [1], use)
    text = str(err.value)
    assert f"No module named '{missing}'" in text
    assert "the job's Python dependencies: python file helper_mod.py" in text


def test_a_file_that_does_not_exist(session: sessioncluster.Session, tmp_path: Path) -> None:
    env = session.get_execution_environment()
    with pytest.raises(FileNotFoundError, match="nope.py does not exist"):
        env.add_python_file(str(tmp_path / "nope.py"))


def test_the_sessions_py_files_reach_every_job(sc_home: Path, tmp_path: Path) -> None:
    """``sessioncluster.start(py_files=[...], requirements=...)``: kept by the JobManager and
    added to every job of the session (here on a local[1] session of its own)."""
    name = unique("sessionmod")
    (tmp_path / f"{name}.py").write_text("GREETING = 'hello'\n")
    (tmp_path / "requirements.txt").write_text("")
    with pytest.raises(ValueError, match="nope.py does not exist"):
        sessioncluster.start("pyfiles-bad", taskmanagers=0, py_files=[str(tmp_path / "nope.py")])
    session = sessioncluster.start("pyfiles", taskmanagers=0, slots=1,
                                   py_files=[str(tmp_path / f"{name}.py")],
                                   requirements=str(tmp_path / "requirements.txt"))
    try:
        env = session.get_execution_environment()
        got = env.from_collection(["a"]).map(
            lambda s: importlib.import_module(name).GREETING + s).execute_and_collect()
        assert got == ["helloa"]
    finally:
        session.stop()


def test_a_streaming_job_uses_its_python_files(session: sessioncluster.Session,
                                               tmp_path: Path) -> None:
    """STREAMING mode: the stateless chain (mapInArrow) and the keyed vertex
    (transformWithStateInPandas) both import the job's own module."""
    from sessioncluster.pyflink.common import Types, WatermarkStrategy
    from sessioncluster.pyflink.datastream import RuntimeExecutionMode
    from sessioncluster.pyflink.datastream.connectors.number_seq import NumberSequenceSource

    mod = unique("streamdep")
    (tmp_path / f"{mod}.py").write_text("def bucket(x):\n    return x % 3\n\n"
                                        "def weight(x):\n    return 10 * x\n")
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    env.add_python_file(str(tmp_path / f"{mod}.py"))
    numbers = env.from_source(NumberSequenceSource(1, 30), WatermarkStrategy.no_watermarks(), "n")
    results = (numbers
               .map(lambda x: (importlib.import_module(mod).bucket(x), x),
                    output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
               .key_by(lambda t: t[0], key_type=Types.LONG())
               .reduce(lambda a, b: (a[0], a[1] + importlib.import_module(mod).weight(b[1])))
               .execute_and_collect("streaming with a python file"))
    latest = dict(results)
    first = {0: 3, 1: 1, 2: 2}
    assert latest == {k: first[k] + 10 * sum(x for x in range(1, 31) if x % 3 == k and x != first[k])
                      for k in (0, 1, 2)}
    assert results.client.wait(60).status is sessioncluster.JobStatus.FINISHED


def test_table_functions_import_the_table_environments_files_and_requirements(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    """Table/SQL Python functions (``create_temporary_system_function``, ``CREATE TEMPORARY
    FUNCTION ... LANGUAGE PYTHON``) import the modules of the TableEnvironment's
    ``add_python_file`` and ``set_python_requirements`` (a local wheel), as Flink 2.3's do
    (/work/briefs/data/tabledeps/probe.out)."""
    from sessioncluster.client.table_environment import TableEnvironment
    from sessioncluster.pyflink.table import DataTypes, EnvironmentSettings
    from sessioncluster.pyflink.table.udf import udf

    mod, dist = unique("tablemod"), unique("tabledist")
    (tmp_path / f"{mod}.py").write_text("from sessioncluster.pyflink.table.udf import udf\n"
                                        "def plus(x):\n    return x + 100\n"
                                        "fn = udf(lambda x: x + 1000, result_type='BIGINT')\n")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_wheel(wheels, dist, {f"{dist}/__init__.py": "def shout(s):\n    return s.upper() + '!'\n"})
    (tmp_path / "requirements.txt").write_text(f"{dist}==0.1\n")
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    t_env.add_python_file(str(tmp_path / f"{mod}.py"))
    t_env.set_python_requirements(str(tmp_path / "requirements.txt"), str(wheels))
    t_env.create_temporary_system_function("plus_dep", udf(
        lambda x: importlib.import_module(mod).plus(x), result_type=DataTypes.BIGINT()))
    t_env.create_temporary_system_function("shout_dep", udf(
        lambda s: importlib.import_module(dist).shout(s), result_type=DataTypes.STRING()))
    t_env.execute_sql(f"CREATE TEMPORARY FUNCTION fn_dep AS '{mod}.fn' LANGUAGE PYTHON")
    try:
        got = t_env.execute_sql("SELECT plus_dep(CAST(1 AS BIGINT)), shout_dep('a'), "
                                "fn_dep(CAST(1 AS BIGINT))").collect()
        assert [tuple(r) for r in got] == [(101, "A!", 1001)]
    finally:
        for name in ("plus_dep", "shout_dep"):
            t_env.drop_temporary_system_function(name)
        t_env.drop_temporary_function("fn_dep")


def test_a_statement_without_the_files_does_not_import_them_and_a_datastream_of_a_table_does(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    """A statement without the TableEnvironment's files, after one with them (on the same
    Spark Python worker: parallelism 1), cannot import their module; ``to_data_stream`` of an
    unbounded Table whose Python function imports a shipped module runs with it."""
    from sessioncluster.client.table_environment import StreamTableEnvironment, TableEnvironment
    from sessioncluster.common import RuntimeExecutionMode
    from sessioncluster.pyflink.common import Types
    from sessioncluster.pyflink.table import DataTypes, EnvironmentSettings
    from sessioncluster.pyflink.table.udf import udf

    from .test_streaming import drop
    from .test_table_to_unbounded_datastream import take, wait_for_status

    mod = unique("streammod")
    (tmp_path / f"{mod}.py").write_text("def plus(x):\n    return x + 100\n")
    plus = udf(lambda x: importlib.import_module(mod).plus(x), result_type=DataTypes.BIGINT())
    names = [unique("plus_b"), unique("plus_s")]
    with_files = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    with_files.get_config().set("parallelism.default", "1")
    with_files.add_python_file(str(tmp_path / f"{mod}.py"))
    with_files.create_temporary_system_function(names[0], plus)
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    try:
        query = f"SELECT {names[0]}(CAST(1 AS BIGINT))"
        assert [tuple(r) for r in with_files.execute_sql(query).collect()] == [(101,)]
        bare = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
        bare.get_config().set("parallelism.default", "1")
        with pytest.raises(Exception, match=f"ModuleNotFoundError: No module named '{mod}'"):
            bare.execute_sql(query).collect()
        src = tmp_path / "in"
        src.mkdir()
        t_env.add_python_file(str(tmp_path / f"{mod}.py"))
        t_env.create_temporary_system_function(names[1], plus)
        t_env.execute_sql(f"""CREATE TEMPORARY TABLE nums_{mod} (n BIGINT) WITH (
            'connector' = 'filesystem', 'path' = '{src}', 'format' = 'csv',
            'source.monitor-interval' = '1s')""")
        table = t_env.sql_query(f"SELECT {names[1]}(n) AS m FROM nums_{mod}")
        records = t_env.to_data_stream(table).map(lambda r: r.m, output_type=Types.LONG()) \
            .execute_and_collect("a table's python file in its datastream")
        drop(src, "part-0.csv", ["1", "2"])
        assert sorted(take(records, 2)) == [101, 102]
        records.client.cancel()
        wait_for_status(records.client, sessioncluster.JobStatus.CANCELED)
    finally:
        with_files.drop_temporary_system_function(names[0])
        t_env.drop_temporary_system_function(names[1])
