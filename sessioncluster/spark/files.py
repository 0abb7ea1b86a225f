"""How Spark lists a FileSource's files, in both modes: its ``binaryFile`` source without the
files' content (a DataFrame of their paths), recursively into subdirectories, skipping files
and directories whose names start with ``.`` or ``_`` (Flink's default file filter: in-progress
part files, ``_SUCCESS``). In STREAMING mode it is Spark's file stream source, which keeps in the
query's checkpoint the files it has read: each file is read once, across restarts and restores,
and a file added later (also in a new subdirectory) is read by the next micro-batch.

Each source subtask then reads its files whole with the source's format (``read_file``)."""

from __future__ import annotations

import glob
import os
from typing import Any

#: the schema of Spark's binaryFile source (a streaming source needs it given)
BINARY_FILE_SCHEMA = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"


def _reader(reader: Any) -> Any:
    return (reader.format("binaryFile").option("recursiveFileLookup", "true")
            .option("ignoreMissingFiles", "false"))


def _checked(paths: list[str]) -> list[str]:
    paths = [p for p in paths if p]
    for p in paths:
        if "://" not in p and not glob.has_magic(p) and not os.path.exists(p):
            raise FileNotFoundError(f"the FileSource's path {p} does not exist")
    return paths


def file_listing(sc: Any, paths: list[str]) -> Any:
    """The paths of the files under ``paths`` now (a DataFrame with one ``path`` column)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    return _reader(spark.read).load(_checked(paths)).select("path")


def file_stream(spark: Any, paths: list[str]) -> Any:
    """The paths of the files under ``paths``, now and as they are added (a streaming
    DataFrame with one ``path`` column; one file source per path, unioned)."""
    frames = [_reader(spark.readStream).schema(BINARY_FILE_SCHEMA).load(p).select("path")
              for p in _checked(paths)]
    df = frames[0]
    for other in frames[1:]:
        df = df.union(other)
    return df
