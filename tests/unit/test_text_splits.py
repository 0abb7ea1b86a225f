"""read_text_file's byte ranges (runtime/textsplits.py): every line read exactly once, by the
range it starts in, whatever the cut points; Flink's line ends; what is left to Spark."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sessioncluster.runtime import textsplits


def read_all(shares: list[list[textsplits.Split]]) -> list[str]:
    return [line for share in shares for split in share for line in textsplits.read_split(*split)]


def flink_lines(data: bytes) -> list[str]:
    """Flink's TextInputFormat: ``\\n`` ends a line, a ``\\r`` before it is dropped, no record
    after a final line end."""
    text = data.decode("utf-8")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines] if text else []


@pytest.mark.parametrize("ending", ["\n", ""])
def test_every_cut_point_reads_every_line_once_in_order(tmp_path: Path, ending: str) -> None:
    rng = random.Random(7)
    lines = ["".join(rng.choice("ab\u00e9 ") for _ in range(rng.randrange(0, 9)))
             for _ in range(60)]
    data = ("\n".join(lines) + ending).encode()
    path = tmp_path / "lines.txt"
    path.write_bytes(data)
    for cut in range(len(data) + 1):
        got = [*textsplits.read_split(str(path), 0, cut), *textsplits.read_split(str(path), cut, len(data))]
        assert got == flink_lines(data), cut


def test_shares_cover_several_files_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textsplits, "CHUNK", 5)  # lines across the reads' chunks too
    expected = []
    for i in range(4):
        lines = [f"f{i}-{j}" for j in range(i * 7)]
        (tmp_path / f"part-{i}.txt").write_text("".join(f"{line}\r\n" for line in lines))
        expected += lines
    (tmp_path / "_SUCCESS").write_text("not read\n")
    (tmp_path / ".hidden").write_text("not read\n")
    for parallelism in (1, 2, 3, 7):
        shares = textsplits.plan(str(tmp_path), parallelism)
        assert shares is not None and len(shares) == parallelism
        assert read_all(shares) == expected, parallelism


def test_a_line_longer_than_a_share_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("x" * 1000 + "\nshort\n")
    shares = textsplits.plan(str(path), 4)
    assert shares is not None
    assert [list(textsplits.read_split(*s)) for share in shares for s in share] == [
        ["x" * 1000], [], [], ["short"]]


def test_a_missing_path_is_named(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such" / "input.txt")
    with pytest.raises(FileNotFoundError, match="no-such"):
        textsplits.plan(missing, 2)


def test_text_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt is not UTF-8"):
        list(textsplits.read_split(str(path), 0, path.stat().st_size))


@pytest.mark.parametrize("spec", ["hdfs://nn/data.txt", "{dir}/data.txt.gz", "{dir}/nested",
                                  "{dir}/nothing-*.txt"])
def test_what_spark_reads_is_left_to_spark(tmp_path: Path, spec: str) -> None:
    (tmp_path / "data.txt.gz").write_bytes(b"")
    (tmp_path / "nested" / "sub").mkdir(parents=True)
    assert textsplits.plan(spec.format(dir=tmp_path), 2) is None
