"""A job's Python dependencies (PyFlink's ``add_python_file``, ``add_python_archive`` and
``set_python_requirements``): packed by the client into blobs keyed by content, shipped through
the BlobServer like user code, made ready once per machine by the TaskManagers, and put on
``sys.path`` for the tasks of that job only.

On a TaskManager each dependency is materialised once, into ``<runtime dir>/deps/<its content and name>``
(extracted into a temporary directory, then renamed, under a file lock, so concurrent slots and
executors on one machine agree). Requirements are installed there by pip (``--target``). A task
adds its job's directories to ``sys.path`` (and, for archives, runs in a working directory where
each archive appears under its target name); when it ends, ``sys.path``, the working directory and
``sys.modules`` are as before, so the next job sees only its own files.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import TracebackType
from typing import Any, Callable

from .api.table.environment import PYTHON_ARCHIVES, PYTHON_FILES, PYTHON_REQUIREMENTS
from .cluster.connection import runtime_dir
from .graph.jobgraph import PythonDependency

#: a fixed time for the entries of a packed directory: the same files give the same blob
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
_SKIPPED = {"__pycache__", ".git", ".ipynb_checkpoints"}
PIP_TIMEOUT_S = 600


class DependencyError(RuntimeError):
    """A dependency that cannot be made ready (a requirement pip cannot install, say)."""


# -- the client side: packing ------------------------------------------------------------------


def _blob(kind: str, name: str, data: bytes, target_dir: str = "") -> tuple[PythonDependency, bytes]:
    return PythonDependency(kind, hashlib.sha256(data).hexdigest(), name, target_dir), data


def _existing(path: str, what: str) -> Path:
    p = Path(os.path.expanduser(path)).resolve()
    if not p.exists():
        raise FileNotFoundError(f"{what}: {path} does not exist")
    return p


def zip_directory(directory: Path, prefix: str) -> bytes:
    """``directory``'s files under ``prefix/`` in a zip whose bytes depend only on the files'
    names and contents (sorted entries, fixed times)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for root, dirs, files in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = Path(root, name)
                arcname = f"{prefix}/{path.relative_to(directory).as_posix()}"
                info = zipfile.ZipInfo(arcname, _ZIP_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def pack_python_file(path: str) -> tuple[PythonDependency, bytes]:
    """``add_python_file``: a module (.py), a package directory, or a zip/wheel/egg."""
    p = _existing(path, "add_python_file")
    if p.is_dir():
        return _blob("zip", p.name, zip_directory(p, p.name))
    if p.suffix in (".zip", ".whl", ".egg"):
        return _blob("zip", p.name, p.read_bytes())
    return _blob("file", p.name, p.read_bytes())


def pack_archive(path: str, target_dir: str | None = None) -> tuple[PythonDependency, bytes]:
    """``add_python_archive``: a zip or tar archive, extracted under ``target_dir`` (default:
    the archive's file name) in the tasks' working directory."""
    p = _existing(path, "add_python_archive")
    if p.is_dir() or not _archive_format(p.name):
        raise ValueError(f"add_python_archive: {path} is not a zip or tar archive")
    target = target_dir or p.name
    if "/" in target or target in (".", "..") or not target:
        raise ValueError(f"add_python_archive: target_dir {target_dir!r} must be a plain name")
    return _blob("archive", p.name, p.read_bytes(), target)


def pack_requirements(requirements_file: str,
                      cache_dir: str | None = None) -> tuple[PythonDependency, bytes]:
    """``set_python_requirements``: the requirements file, and the packages of ``cache_dir``
    (installed from there, offline) when given."""
    req = _existing(requirements_file, "set_python_requirements")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("requirements.txt", _ZIP_EPOCH), req.read_bytes())
    data = buf.getvalue()
    if cache_dir is not None:
        cache = _existing(cache_dir, "set_python_requirements (requirements_cache_dir)")
        with zipfile.ZipFile(io.BytesIO(zip_directory(cache, "cache"))) as packed, \
                zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as zf:
            for info in packed.infolist():
                zf.writestr(info, packed.read(info))
        data = buf.getvalue()
    return _blob("requirements", req.name, data)


def pack_configured(options: dict[str, str], cache: "PackCache | None" = None
                    ) -> list[tuple[PythonDependency, bytes]]:
    """The dependencies Flink's options name, packed: ``python.files`` (comma-separated),
    ``python.archives`` (comma-separated ``path[#target_dir]``) and ``python.requirements``
    (``file[#cache_dir]``), as a TableEnvironment's ``add_python_file``... set them. ``cache``:
    the packs of earlier calls, taken again for files unchanged since."""
    cache = cache if cache is not None else PackCache()
    packed = [cache.pack("file", p.strip()) for p in options.get(PYTHON_FILES, "").split(",")
              if p.strip()]
    for item in options.get(PYTHON_ARCHIVES, "").split(","):
        if item.strip():
            path, _, target = item.strip().partition("#")
            packed.append(cache.pack("archive", path, target))
    requirements = options.get(PYTHON_REQUIREMENTS, "").strip()
    if requirements:
        path, _, cache_dir = requirements.partition("#")
        packed.append(cache.pack("requirements", path, cache_dir))
    return packed


class PackCache:
    """The packed dependencies of one client by what was named (kind, path and its target
    directory or requirements cache), each kept with the (path, size, mtime) of its files: a
    set of files unchanged since is not packed again."""

    def __init__(self) -> None:
        self._packed: dict[tuple[str, str, str], tuple[Any, tuple[PythonDependency, bytes]]] = {}

    def pack(self, kind: str, path: str, extra: str = "") -> tuple[PythonDependency, bytes]:
        """``path`` packed as ``kind`` (``file``: :func:`pack_python_file`, ``archive``:
        :func:`pack_archive` into ``extra``, ``requirements``: :func:`pack_requirements` with
        the cache directory ``extra``), or its pack of before when its files are unchanged."""
        key = (kind, path, extra)
        stamp = _stamp(path), _stamp(extra) if kind == "requirements" and extra else None
        known = self._packed.get(key)
        if known is not None and known[0] == stamp and stamp[0] is not None:
            return known[1]
        if kind == "file":
            packed = pack_python_file(path)
        elif kind == "archive":
            packed = pack_archive(path, extra or None)
        else:
            packed = pack_requirements(path, extra or None)
        self._packed[key] = (stamp, packed)
        return packed


def _stamp(path: str) -> tuple[tuple[str, int, int], ...] | None:
    """The (path, size, mtime) of ``path``'s files (a directory's, walked), or None when it
    does not exist."""
    p = Path(os.path.expanduser(path)).resolve()
    if p.is_file():
        st = p.stat()
        return ((str(p), st.st_size, st.st_mtime_ns),)
    if not p.is_dir():
        return None
    stamps = []
    for root, dirs, files in os.walk(p):
        dirs.sort()
        for name in sorted(files):
            st = Path(root, name).stat()
            stamps.append((os.path.join(root, name), st.st_size, st.st_mtime_ns))
    return tuple(stamps)


def _archive_format(name: str) -> str | None:
    for suffix, fmt in ((".zip", "zip"), (".jar", "zip"), (".whl", "zip"), (".egg", "zip"),
                        (".tar.gz", "gztar"), (".tgz", "gztar"), (".tar.bz2", "bztar"),
                        (".tar.xz", "xztar"), (".tar", "tar")):
        if name.endswith(suffix):
            return fmt
    return None


# -- the TaskManager side: materialising ---------------------------------------------------------


def materialise(dep: PythonDependency, data: bytes, root: Path) -> Path:
    """The directory holding ``dep``, made once per machine (concurrent callers wait)."""
    target = root / dep.directory_name
    if target.is_dir():
        return target
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(root / f"{dep.directory_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{dep.key[:12]}-", dir=root))
        try:
            _unpack(dep, data, tmp)
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return target


def _unpack(dep: PythonDependency, data: bytes, into: Path) -> None:
    if dep.kind == "file":
        (into / dep.name).write_bytes(data)
    elif dep.kind == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            zf.extractall(into)
    elif dep.kind == "archive":
        packed = into / ".packed" / dep.name
        packed.parent.mkdir()
        packed.write_bytes(data)
        shutil.unpack_archive(packed, into / "content", _archive_format(dep.name))
        shutil.rmtree(packed.parent)
    elif dep.kind == "requirements":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            zf.extractall(into / "spec")
        cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
               "--no-warn-script-location", "--quiet", "--target", str(into / "site"),
               "-r", str(into / "spec" / "requirements.txt")]
        if (into / "spec" / "cache").is_dir():
            cmd += ["--no-index", "--find-links", str(into / "spec" / "cache")]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise DependencyError(f"pip did not install {dep.name} within {PIP_TIMEOUT_S} s") from exc
        if done.returncode != 0:
            raise DependencyError(f"pip could not install the requirements of {dep.name}:\n"
                                  f"{(done.stderr or done.stdout).strip()}")
    else:
        raise DependencyError(f"unknown kind of Python dependency {dep.kind!r}")


def _path_entry(dep: PythonDependency, directory: Path) -> Path | None:
    if dep.kind in ("file", "zip"):
        return directory
    if dep.kind == "requirements":
        return directory / "site"
    return None


def prepare(deps: list[PythonDependency],
            fetch: Callable[[str], bytes | None]) -> "JobEnvironment":
    """The environment of a job's dependencies on this machine: each made ready once (its
    blob from ``fetch`` only when it is not here yet)."""
    root = runtime_dir() / "deps"
    ready = []
    for dep in deps:
        directory = root / dep.directory_name
        if not directory.is_dir():  # made once per machine; pip runs here if need be
            data = fetch(dep.key)
            if data is None:
                raise LookupError(f"the Python dependency {dep.name} is gone from the BlobServer")
            directory = materialise(dep, data, root)
        ready.append((dep, directory))
    return JobEnvironment(ready, root)


class JobEnvironment:
    """While entered: the job's dependencies on ``sys.path`` (and its archives in the working
    directory); on exit, the process as it was (the job's modules forgotten)."""

    def __init__(self, deps: list[tuple[PythonDependency, Path]], root: Path) -> None:
        self.deps = deps
        self.paths = [str(p) for d, directory in deps if (p := _path_entry(d, directory))]
        self.archives = [(d.target_dir, directory / "content") for d, directory in deps
                         if d.kind == "archive"]
        self.root = root
        self._cwd: str | None = None

    def __enter__(self) -> "JobEnvironment":
        sys.path[:0] = self.paths
        if self.archives:
            # a working directory of this set of archives, where each shows under its name
            sig = hashlib.sha256("|".join(f"{t}={p}" for t, p in self.archives).encode()).hexdigest()
            work = self.root / "work" / sig[:24]
            work.mkdir(parents=True, exist_ok=True)
            for target, content in self.archives:
                link = work / target
                if not link.is_symlink():
                    try:
                        link.symlink_to(content, target_is_directory=True)
                    except FileExistsError:
                        pass  # another slot made it
            self._cwd = os.getcwd()
            os.chdir(work)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for p in self.paths:
            try:
                sys.path.remove(p)
            except ValueError:
                pass
        if self._cwd is not None:
            os.chdir(self._cwd)
        prefixes = tuple(p.rstrip(os.sep) + os.sep for p in self.paths)
        if prefixes:
            for name, module in list(sys.modules.items()):
                file = getattr(module, "__file__", None) or ""
                if file.startswith(prefixes):
                    del sys.modules[name]
            import importlib

            importlib.invalidate_caches()


def describe_all(deps: list[PythonDependency]) -> str:
    """The job's declared dependencies, for an import error's message."""
    return ", ".join(d.describe() for d in deps) or "none"
