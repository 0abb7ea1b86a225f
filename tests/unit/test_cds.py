"""The class-data-sharing archive's naming, claim, promotion and JVM options (no JVM started)."""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessioncluster.options import StartOptions
from sessioncluster.spark import cds
from sessioncluster.spark.driver import IDLE_JAVA_OPTIONS, java_options

KEY = "17.0.15-4.3.0-0123456789abcdef"


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def dump(path: Path, complete: bool = True) -> Path:
    """A part file as the JVM leaves it: the header (magic) written last."""
    path.write_bytes((cds.MAGIC if complete else b"\0\0\0\0") + b"\0" * 8192)
    return path


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cds.DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cds.cache_dir() == tmp_path / "sessioncluster" / "cds"
    monkeypatch.setenv(cds.DIR_ENV, str(tmp_path / "mine"))
    assert cds.cache_dir() == tmp_path / "mine"


def fake_jdk(root: Path, version: str = "17.0.15", base_archive: bool = True) -> Path:
    (root / "lib" / "server").mkdir(parents=True)
    (root / "release").write_text(f'IMPLEMENTOR="Debian"\nJAVA_VERSION="{version}"\n')
    (root / "lib" / "server" / "libjvm.so").write_bytes(b"jvm")
    if base_archive:
        (root / "lib" / "server" / "classes.jsa").write_bytes(b"base")
    return root


def test_java_version_needs_a_hotspot_jdk_that_can_dump(tmp_path: Path) -> None:
    assert cds.java_version(fake_jdk(tmp_path / "a")) == "17.0.15"
    assert cds.java_version(fake_jdk(tmp_path / "b", "1.8.0_392")) is None  # no dynamic archives
    assert cds.java_version(fake_jdk(tmp_path / "c", base_archive=False)) is None
    assert cds.java_version(tmp_path / "nothing") is None


def test_key_names_the_versions_and_changes_with_the_jars(tmp_path: Path) -> None:
    jdk, spark = fake_jdk(tmp_path / "jdk"), tmp_path / "spark"
    (spark / "jars").mkdir(parents=True)
    (spark / "jars" / "spark-core.jar").write_bytes(b"1")
    key = cds.archive_key(jdk, "17.0.15", spark, "4.3.0")
    assert key.startswith("17.0.15-4.3.0-") and key == cds.archive_key(jdk, "17.0.15", spark, "4.3.0")
    (spark / "jars" / "extra.jar").write_bytes(b"2")
    assert cds.archive_key(jdk, "17.0.15", spark, "4.3.0") != key


def test_the_first_primer_writes_the_next_start_uses(tmp_path: Path) -> None:
    first = cds.plan_in(tmp_path, KEY, os.getpid())
    assert first.mode == "write" and first.path == tmp_path / f"{KEY}.{os.getpid()}.jsa.part"
    assert f"-XX:ArchiveClassesAtExit={first.path}" in first.driver_options
    assert first.executor_options == ""  # executors gain nothing from writing their own
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    # a second primer while the first one runs: neither writes nor uses
    other = cds.plan_in(tmp_path, KEY, os.getpid() + 1)
    assert other.mode == "off" and "writing" in other.reason
    assert other.driver_options == other.executor_options == ""
    # the first primer's JVM exits and dumps; the next start promotes and uses it
    dump(first.path)  # type: ignore[arg-type]
    nxt = cds.plan_in(tmp_path, KEY, os.getpid() + 1)
    archive = tmp_path / f"{KEY}.jsa"
    assert nxt.mode == "use" and nxt.path == archive and archive.is_file()
    assert f"-XX:SharedArchiveFile={archive}" in nxt.driver_options
    assert nxt.executor_options == nxt.driver_options and cds.QUIET in nxt.driver_options
    assert stat.S_IMODE(archive.stat().st_mode) == 0o400
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", f"{KEY}.jsa"]


def test_a_dump_under_way_is_not_promoted(tmp_path: Path) -> None:
    assert cds.plan_in(tmp_path, KEY, os.getpid()).mode == "write"
    part = dump(tmp_path / f"{KEY}.{os.getpid()}.jsa.part", complete=False)
    assert not cds.promote(tmp_path, KEY)
    assert part.exists() and not (tmp_path / f"{KEY}.jsa").exists()


def test_a_failed_writer_is_taken_over_once_stale(tmp_path: Path) -> None:
    gone = dead_pid()
    assert cds.plan_in(tmp_path, KEY, gone).mode == "write"
    part = dump(tmp_path / f"{KEY}.{gone}.jsa.part", complete=False)  # its JVM was killed
    # soon after, its JVM may still be dumping: wait
    assert cds.plan_in(tmp_path, KEY, os.getpid()).mode == "off"
    later = time.time() + cds.STALE_SECONDS + 1
    with cds.locked(tmp_path):
        assert not cds.promote(tmp_path, KEY, now=later)
        assert not part.exists()
        assert cds.claim(tmp_path, KEY, os.getpid(), now=later)
    assert (tmp_path / f"{KEY}.writer").read_text() == str(os.getpid())


def test_a_live_writer_keeps_its_claim_however_old(tmp_path: Path) -> None:
    with cds.locked(tmp_path):
        assert cds.claim(tmp_path, KEY, os.getpid())
        assert cds.claim(tmp_path, KEY, os.getpid())  # its own claim
        assert not cds.claim(tmp_path, KEY, dead_pid(), now=time.time() + 10 * cds.STALE_SECONDS)


def test_a_second_dump_does_not_replace_the_archive(tmp_path: Path) -> None:
    archive = dump(tmp_path / f"{KEY}.jsa")
    archive.write_bytes(cds.MAGIC + b"first")
    dump(tmp_path / f"{KEY}.123.jsa.part")
    assert cds.promote(tmp_path, KEY)
    assert archive.read_bytes() == cds.MAGIC + b"first"
    assert not (tmp_path / f"{KEY}.123.jsa.part").exists()


def test_an_unwritable_cache_turns_sharing_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(cds.DIR_ENV, str(blocker / "cds"))
    plan = cds.plan()
    if cds.machine_key() is None:  # no JDK that can dump here: off for that reason
        assert plan.mode == "off" and "JDK" in plan.reason
    else:
        assert plan.mode == "off" and "cache directory" in plan.reason
    assert not _archived(java_options(StartOptions()))


def _archived(conf: dict[str, str]) -> bool:
    return any("SharedArchiveFile" in v or "ArchiveClassesAtExit" in v for v in conf.values())


def test_a_start_without_an_archive_launches_one_primer(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cds.DIR_ENV, str(tmp_path))
    monkeypatch.setattr(cds, "machine_key", lambda: KEY)
    launched: list[Path] = []
    monkeypatch.setattr(cds, "start_primer", lambda d: launched.append(d) or 4242)
    first = cds.plan()
    assert first.mode == "off" and "4242" in first.reason and launched == [tmp_path]
    assert not _archived(java_options(StartOptions()))  # this start runs without
    # while a primer holds the claim, no second one is launched
    with cds.locked(tmp_path):
        assert cds.claim(tmp_path, KEY, os.getpid())
    launched.clear()
    busy = cds.plan()
    assert busy.mode == "off" and str(os.getpid()) in busy.reason and launched == []
    # once its dump is complete, the next start uses it
    dump(tmp_path / f"{KEY}.{os.getpid()}.jsa.part")
    assert cds.plan().mode == "use" and launched == []


def test_java_options_per_master(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cds, "plan", lambda pid=None: cds.ArchivePlan("use", tmp_path / "a.jsa"))
    local = java_options(StartOptions(taskmanagers=2))
    assert set(local) == {"spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"}
    assert all(f"-XX:SharedArchiveFile={tmp_path / 'a.jsa'}" in v for v in local.values())
    # executors on other machines have no such file: the driver only
    remote = java_options(StartOptions(spark_master="spark://h:7077", taskmanagers=1))
    assert set(remote) == {"spark.driver.extraJavaOptions"}
    off = java_options(StartOptions(taskmanagers=2, class_data_sharing=False))
    assert not _archived(off)
    # without the archive the JVMs on this machine still idle without their perf-data sampler
    assert all(v.split() == [IDLE_JAVA_OPTIONS] for v in off.values()) and len(off) == 2


def test_option_is_a_flag_pair_through_every_front_end() -> None:
    parser = argparse.ArgumentParser()
    StartOptions.add_arguments(parser)
    assert StartOptions.from_namespace(parser.parse_args([])).class_data_sharing is True
    off = StartOptions.from_namespace(parser.parse_args(["--no-class-data-sharing"]))
    assert off.class_data_sharing is False
    # the JobManager's command line carries it back
    assert StartOptions.from_namespace(parser.parse_args(off.argv())) == off
    assert "--no-class-data-sharing" in off.argv()
    assert StartOptions.from_kwargs(class_data_sharing=False) == off
    with pytest.raises(ValueError):
        StartOptions(class_data_sharing="no")  # type: ignore[arg-type]
