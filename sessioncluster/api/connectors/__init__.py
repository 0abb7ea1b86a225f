"""Connectors with PyFlink's names: the bounded FileSource and FileSink."""

from .file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    FileSourceBuilder,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)

__all__ = ["BucketAssigner", "FileSink", "FileSource", "FileSourceBuilder", "OutputFileConfig",
           "RollingPolicy", "StreamFormat"]
