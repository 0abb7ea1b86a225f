"""Python dependencies without Spark: packing (deterministic blobs), materialising once, and a
job's sys.path and modules scoped to its tasks."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from sessioncluster.dependencies import (
    DependencyError,
    JobEnvironment,
    materialise,
    pack_archive,
    pack_python_file,
    pack_requirements,
)


def module(tmp: Path, name: str, body: str) -> Path:
    path = tmp / f"{name}.py"
    path.write_text(body)
    return path


def test_packing_is_deterministic_and_names_what_was_given(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    dep, data = pack_python_file(str(pkg))
    assert (dep.kind, dep.name) == ("zip", "pkg")
    assert sorted(zipfile.ZipFile(__import__("io").BytesIO(data)).namelist()) == [
        "pkg/__init__.py", "pkg/sub/__init__.py"]
    (pkg / "__init__.py").touch()  # a new mtime, the same content: the same blob
    assert pack_python_file(str(pkg)) == (dep, data)
    file_dep, data = pack_python_file(str(module(tmp_path, "m", "Y = 2\n")))
    assert (file_dep.kind, file_dep.name) == ("file", "m.py")
    # the same text under another name: the same blob, another directory on the TaskManager
    other, same = pack_python_file(str(module(tmp_path, "n", "Y = 2\n")))
    assert (other.key, same) == (file_dep.key, data)
    assert other.directory_name != file_dep.directory_name


def test_missing_files_and_bad_archives_fail_at_the_call(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="add_python_file: .*nope.py does not exist"):
        pack_python_file(str(tmp_path / "nope.py"))
    with pytest.raises(FileNotFoundError, match="set_python_requirements"):
        pack_requirements(str(tmp_path / "requirements.txt"))
    with pytest.raises(ValueError, match="not a zip or tar archive"):
        pack_archive(str(module(tmp_path, "plain", "")))


def test_a_job_sees_its_own_module_and_the_next_job_its_own(tmp_path: Path) -> None:
    root = tmp_path / "deps"
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    deps = []
    for d, value in ((v1, 1), (v2, 2)):
        dep, data = pack_python_file(str(module(d, "shipped_mod", f"VALUE = {value}\n")))
        deps.append((dep, materialise(dep, data, root)))
    assert deps[0][1] != deps[1][1] and materialise(deps[0][0], b"ignored", root) == deps[0][1]
    path_before = list(sys.path)
    for (dep, directory), value in zip(deps, (1, 2)):
        with JobEnvironment([(dep, directory)], root):
            import shipped_mod  # type: ignore[import-not-found]

            assert shipped_mod.VALUE == value
        assert "shipped_mod" not in sys.modules and sys.path == path_before


def test_an_archive_shows_under_its_name_in_the_working_directory(tmp_path: Path) -> None:
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("words.txt", "to be\n")
    dep, data = pack_archive(str(archive), "words")
    cwd = Path.cwd()
    with JobEnvironment([(dep, materialise(dep, data, tmp_path / "deps"))], tmp_path / "deps"):
        assert Path("words/words.txt").read_text() == "to be\n"
    assert Path.cwd() == cwd


def test_requirements_pip_cannot_install_say_what_pip_said(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("surely-no-such-package-sessioncluster==9.9\n")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    dep, data = pack_requirements(str(req), str(wheels))
    with pytest.raises(DependencyError, match="pip could not install the requirements of "
                                              "requirements.txt:\n.*surely-no-such-package"):
        materialise(dep, data, tmp_path / "deps")
    assert not (tmp_path / "deps" / dep.directory_name).exists()  # nothing half-made: the next try runs pip again


def test_an_unchanged_set_of_files_is_packed_once(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from sessioncluster import dependencies
    from sessioncluster.api.table.environment import PYTHON_FILES, PYTHON_REQUIREMENTS

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    mod = module(tmp_path, "m", "Y = 2\n")
    req = tmp_path / "requirements.txt"
    req.write_text("nothing==1\n")
    options = {PYTHON_FILES: f"{pkg},{mod}", PYTHON_REQUIREMENTS: f"{req}#{pkg}"}
    zipped = []
    real = dependencies.zip_directory
    monkeypatch.setattr(dependencies, "zip_directory",
                        lambda d, prefix: zipped.append(prefix) or real(d, prefix))
    cache = dependencies.PackCache()
    first = dependencies.pack_configured(options, cache)
    assert zipped == ["pkg", "cache"]
    assert dependencies.pack_configured(options, cache) == first and zipped == ["pkg", "cache"]
    (pkg / "__init__.py").write_text("X = 22\n")  # another size: both of pkg's packs again
    again = dependencies.pack_configured(options, cache)
    assert zipped == ["pkg", "cache"] * 2 and again[0] != first[0] and again[1] == first[1]
    mod.unlink()
    with pytest.raises(FileNotFoundError, match="add_python_file"):
        dependencies.pack_configured(options, cache)
