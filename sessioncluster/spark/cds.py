"""A JVM class-data-sharing (AppCDS) archive of Spark's classes, made once per machine.

The driver JVM and each executor JVM load thousands of Spark classes at start; a dynamic
CDS archive (JDK 13+) maps them ready-parsed instead. The first start on a machine whose
cache has no archive for its JVM and Spark launches a *primer* (:mod:`.cdsprime`) in the
background and runs without the archive itself: the primer claims the archive, runs a small
Spark workload of its own (RDDs with Python, SQL, Arrow, Structured Streaming on RocksDB) in
a JVM started with ``-XX:ArchiveClassesAtExit``, waits for that JVM to dump its classes as it
exits, and moves the dump into place with an atomic rename. From then on the driver and the
executors on this machine start with ``-XX:SharedArchiveFile``. One archive serves both kinds
of JVM: they share the classpath, and the classes of Spark's core that both load make most of
the gain. No session's own JVM ever dumps, so no session's stop waits for a dump.

A JVM that cannot use the archive (its classpath or JDK changed, the file is damaged) runs
without it, silently (``-Xlog:cds=off``); anything that goes wrong here turns sharing off for
that start, never fails it. Layout of the cache directory (owner-only)::

    <key>.jsa              the archive (key: Java version, pyspark version, hash of JVM + jars)
    <key>.<pid>.jsa.part   a primer's dump, pid = the primer's
    <key>.writer           the claim of the one primer (its pid)
    primer.log             the last primer's output
    .lock                  flock around promotion and claims
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

log = logging.getLogger("sessioncluster.spark")

#: the directory of the archives, instead of ``$XDG_CACHE_HOME/sessioncluster/cds``
DIR_ENV = "SESSIONCLUSTER_CDS_DIR"
#: the first bytes of a dynamic archive: CDS_DYNAMIC_ARCHIVE_MAGIC 0xf00baba8, little-endian.
#: The JVM writes the header last, so a dump still under way (or cut short) starts with zeros.
MAGIC = b"\xa8\xab\x0b\xf0"
#: a writer whose JobManager is gone and whose dump is not complete after this long has
#: failed (its JVM was killed): its claim and part file are removed
STALE_SECONDS = 600.0
#: JVM flags that keep CDS's warnings (classes it skips, an archive it cannot use) out of logs
QUIET = "-Xlog:cds=off,cds+dynamic=off"
#: the first JDK with dynamic archives (-XX:ArchiveClassesAtExit)
MIN_JAVA = 13


@dataclass(frozen=True)
class ArchivePlan:
    """What a JVM does with the archive: ``use`` it, ``write`` it at its exit (the primer's
    JVM only), or neither (``off``, with the ``reason``)."""

    mode: str
    path: Path | None = None
    reason: str = ""

    @property
    def driver_options(self) -> str:
        """``spark.driver.extraJavaOptions``."""
        if self.mode == "use":
            return f"-XX:SharedArchiveFile={self.path} {QUIET}"
        if self.mode == "write":
            return f"-XX:ArchiveClassesAtExit={self.path} {QUIET}"
        return ""

    @property
    def executor_options(self) -> str:
        """``spark.executor.extraJavaOptions`` (executors on this machine only)."""
        return f"-XX:SharedArchiveFile={self.path} {QUIET}" if self.mode == "use" else ""


def cache_dir() -> Path:
    """The per-user directory of the archives."""
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sessioncluster" / "cds"


def java_home() -> Path | None:
    """The JDK Spark's launcher runs: ``$JAVA_HOME``, else the ``java`` on the PATH."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]).resolve()
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def spark_home() -> Path:
    """Spark's home as pyspark's launcher finds it (``$SPARK_HOME``, else pyspark's own)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def java_version(home: Path) -> str | None:
    """The JDK's version from its ``release`` file, if it can make dynamic archives (HotSpot
    with its default CDS archive, which a dynamic archive sits on)."""
    try:
        release = (home / "release").read_text()
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="([^"]+)"', release, re.M)
    if not match or "OpenJ9" in release:
        return None
    version = match.group(1)
    number = re.match(r"(?:1\.)?(\d+)", version)  # 1.8.0_392 is Java 8, 17.0.15 Java 17
    major = int(number.group(1)) if number else 0
    if major < MIN_JAVA or not (home / "lib" / "server" / "classes.jsa").is_file():
        return None
    return version


def archive_key(java: Path, version: str, spark: Path, pyspark_version: str) -> str:
    """``<java version>-<pyspark version>-<hash>``: the hash covers the JVM's files and every jar
    of Spark's classpath (name, size, mtime), so that an upgrade of either makes a new key."""
    digest = hashlib.sha256()
    for path in [java / "release", java / "lib" / "server" / "libjvm.so",
                 *sorted((spark / "jars").glob("*.jar"))]:
        try:
            st = path.stat()
        except OSError:
            continue
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    digest.update(f"conf:{(spark / 'conf').is_dir()}".encode())
    return f"{version}-{pyspark_version}-{digest.hexdigest()[:16]}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_complete(path: Path) -> bool:
    """A dump the JVM finished: its header (written last) is there."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == MAGIC
    except OSError:
        return False


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """An exclusive flock on the directory's ``.lock`` (made owner-only, with the directory)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def promote(directory: Path, key: str, now: float | None = None) -> bool:
    """Move a writer's complete dump into place (atomically) and drop failed ones; True if the
    archive is there afterwards. Call with :func:`locked` held."""
    now = time.time() if now is None else now
    archive = directory / f"{key}.jsa"
    for part in sorted(directory.glob(f"{key}.*.jsa.part")):
        writer = part.name[len(key) + 1:].split(".", 1)[0]
        if is_complete(part):
            if archive.exists():
                part.unlink()
            else:
                os.replace(part, archive)
                archive.chmod(0o400)
            (directory / f"{key}.writer").unlink(missing_ok=True)
        elif (not writer.isdigit() or not pid_alive(int(writer))) \
                and now - part.stat().st_mtime > STALE_SECONDS:
            part.unlink()
    return archive.is_file()


def claim(directory: Path, key: str, pid: int, now: float | None = None) -> bool:
    """Become the one writer of ``key``'s archive (False: another one is). A claim whose
    JobManager is gone stays for :data:`STALE_SECONDS` (its JVM may still be dumping), then is
    taken over. Call with :func:`locked` held."""
    now = time.time() if now is None else now
    path = directory / f"{key}.writer"
    try:
        holder = int(path.read_text().strip() or 0)
        age = now - path.stat().st_mtime
    except (OSError, ValueError):
        holder, age = 0, STALE_SECONDS + 1
    if path.exists():
        if holder == pid:
            return True
        if (holder and pid_alive(holder)) or age <= STALE_SECONDS:
            return False
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(str(pid))
    return True


def plan_in(directory: Path, key: str, pid: int) -> ArchivePlan:
    """The plan of one start whose JobManager is ``pid``, for the archive ``key`` in
    ``directory``: use the archive if there is one (after promoting a finished dump), else
    write it if no other session is writing it."""
    with locked(directory):
        if promote(directory, key):
            return ArchivePlan("use", directory / f"{key}.jsa")
        if claim(directory, key, pid):
            return ArchivePlan("write", directory / f"{key}.{pid}.jsa.part")
    return ArchivePlan("off", reason="another session is writing the archive")


def machine_key() -> str | None:
    """This machine's archive key (its JDK and Spark), None if the JDK cannot make one."""
    home = java_home()
    version = java_version(home) if home else None
    if home is None or version is None:
        return None
    import pyspark

    return archive_key(home, version, spark_home(), pyspark.__version__)


def existing_archive() -> Path | None:
    """This machine's archive if it is there (a finished dump promoted first); never claims."""
    key = machine_key()
    if key is None:
        return None
    directory = cache_dir()
    with locked(directory):
        return directory / f"{key}.jsa" if promote(directory, key) else None


def plan() -> ArchivePlan:
    """The plan for a session's start on this machine: ``use`` the archive if there is one;
    else ``off``, after launching a primer (:func:`start_primer`) unless one is at work; ``off``
    too (with the reason) when the JVM cannot make dynamic archives or the cache directory is
    not writable."""
    key = machine_key()
    if key is None:
        return ArchivePlan("off", reason=f"no HotSpot JDK {MIN_JAVA}+ with a default CDS archive "
                                         f"({java_home() or 'no java on the PATH'})")
    directory = cache_dir()
    try:
        with locked(directory):
            if promote(directory, key):
                return ArchivePlan("use", directory / f"{key}.jsa")
            holder = current_writer(directory, key)
        if holder:
            return ArchivePlan("off", reason=f"the archive is being made (process {holder})")
        pid = start_primer(directory)
    except OSError as exc:
        return ArchivePlan("off", reason=f"cache directory {directory}: {exc}")
    return ArchivePlan("off", reason=f"no archive yet: a primer (launched as process {pid}) "
                                     f"makes one in the background for the next start")


def current_writer(directory: Path, key: str) -> int | None:
    """The pid of a live primer holding ``key``'s claim, if any. Call with :func:`locked` held."""
    try:
        holder = int((directory / f"{key}.writer").read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    return holder if holder and pid_alive(holder) else None


def start_primer(directory: Path) -> int:
    """Launch :mod:`.cdsprime` detached (its own session, at a lower CPU priority; it forks, so
    that the primer is nobody's descendant and a session's stop waits for its own processes
    only), without waiting for it; its output goes to ``primer.log``. The launcher's pid."""
    import subprocess
    import sys
    import threading

    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(directory / "primer.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "sessioncluster.spark.cdsprime", "--detach"],
            stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
            start_new_session=True)
    finally:
        os.close(fd)
    threading.Thread(target=launcher.wait, name="cds-primer-launcher", daemon=True).start()
    return launcher.pid
