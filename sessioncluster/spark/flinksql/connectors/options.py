"""A table's ``WITH (...)`` options checked as Flink's ``FactoryUtil`` checks them, with its
messages: an unknown connector or format, a missing required option, an unsupported option."""

from __future__ import annotations

from ....api.table.conversion import CHANGELOG_OPTION, DATASTREAM_CONNECTOR, ROWTIME_OPTION
from ....api.table.typeparser import parse_type
from ..model import CatalogTable, FlinkSqlError
from .formats import FORMATS, check_raw, file_row_type

CONNECTORS = ("blackhole", "datagen", "filesystem", "print")

_COMMON = {"connector", "property-version"}

#: Flink's FileSystemTableFactory options (required, then optional)
FILESYSTEM_REQUIRED = ("path", "format")
FILESYSTEM_OPTIONAL = {
    "partition.default-name", "source.monitor-interval", "source.report-statistics",
    "source.path.regex-pattern", "sink.rolling-policy.file-size",
    "sink.rolling-policy.rollover-interval", "sink.rolling-policy.inactivity-interval",
    "sink.rolling-policy.check-interval", "sink.shuffle-by-partition.enable",
    "partition.time-extractor.kind", "partition.time-extractor.class",
    "partition.time-extractor.timestamp-formatter", "partition.time-extractor.timestamp-pattern",
    "sink.partition-commit.trigger", "sink.partition-commit.delay",
    "sink.partition-commit.watermark-time-zone", "sink.partition-commit.policy.kind",
    "sink.partition-commit.policy.class", "sink.partition-commit.policy.class.parameters",
    "sink.partition-commit.success-file.name", "auto-compaction", "compaction.file-size",
    "compaction.parallelism", "sink.parallelism",
}

PRINT_OPTIONAL = {"print-identifier", "standard-error", "sink.parallelism"}
BLACKHOLE_OPTIONAL: set[str] = set()
DATAGEN_OPTIONAL = {"rows-per-second", "number-of-rows", "scan.parallelism"}
#: per field: ``fields.<name>.<option>``
DATAGEN_FIELD_OPTIONS = ("kind", "min", "max", "max-past", "length", "var-len", "start", "end",
                         "null-rate")

_FORMAT_FACTORY = "org.apache.flink.table.factories.DeserializationFormatFactory"
_TABLE_FACTORY = "org.apache.flink.table.factories.DynamicTableFactory"


def _no_factory(identifier: str, factory: str, available: tuple[str, ...]) -> FlinkSqlError:
    return FlinkSqlError(
        f"Could not find any factory for identifier '{identifier}' that implements '{factory}' "
        f"in the classpath.\n\nAvailable factory identifiers are:\n\n" + "\n".join(available))


def _unsupported(identifier: str, unknown: set[str], supported: set[str]) -> FlinkSqlError:
    return FlinkSqlError(
        f"Unsupported options found for '{identifier}'.\n\nUnsupported options:\n\n"
        + "\n".join(sorted(unknown)) + "\n\nSupported options:\n\n" + "\n".join(sorted(supported)))


def _missing(keys: list[str]) -> FlinkSqlError:
    return FlinkSqlError("One or more required options are missing.\n\n"
                         "Missing required options are:\n\n" + "\n".join(sorted(keys)))


def validate(table: CatalogTable) -> None:
    """Check a table's connector, its options and its column types as Flink does when the table
    is first used; raise ``FlinkSqlError`` with Flink's message."""
    options = table.options
    connector = table.connector
    if not connector:
        raise FlinkSqlError(f"Table options do not contain an option key 'connector' for "
                            f"discovering a connector. (table '{table.name}')")
    if connector == DATASTREAM_CONNECTOR:
        _validate_datastream(table)
        return
    if connector not in CONNECTORS:
        raise _no_factory(connector, _TABLE_FACTORY, CONNECTORS)
    for column in table.physical_columns:
        parse_type(column.type or "")
    if connector == "filesystem":
        _validate_filesystem(table)
    elif connector == "datagen":
        _validate_datagen(table)
    else:
        allowed = _COMMON | (PRINT_OPTIONAL if connector == "print" else BLACKHOLE_OPTIONAL)
        unknown = set(options) - allowed
        if unknown:
            raise _unsupported(connector, unknown, allowed)


def _validate_datastream(table: CatalogTable) -> None:
    """The table of an unbounded DataStream (``from_data_stream``): made by the Table API,
    never written in DDL (its JobGraph comes with the statement)."""
    if not table.payload:
        raise FlinkSqlError(f"the '{DATASTREAM_CONNECTOR}' connector is the table of an "
                            f"unbounded DataStream: use StreamTableEnvironment.from_data_stream"
                            f"(ds) (table '{table.name}')")
    unknown = set(table.options) - _COMMON - {ROWTIME_OPTION, CHANGELOG_OPTION}
    if unknown:
        raise _unsupported(DATASTREAM_CONNECTOR, unknown,
                           _COMMON | {ROWTIME_OPTION, CHANGELOG_OPTION})
    for column in table.physical_columns:
        parse_type(column.type or "")


def _validate_filesystem(table: CatalogTable) -> None:
    options = table.options
    missing = [k for k in FILESYSTEM_REQUIRED if k not in options]
    if missing:
        raise _missing(missing)
    fmt = options["format"]
    if fmt not in FORMATS:
        raise _no_factory(fmt, _FORMAT_FACTORY, FORMATS)
    allowed = _COMMON | set(FILESYSTEM_REQUIRED) | FILESYSTEM_OPTIONAL
    # as Flink's filesystem factory: the format's own options are the format's business
    unknown = {k for k in options if k not in allowed and not k.startswith(f"{fmt}.")}
    if unknown:
        raise _unsupported("filesystem", unknown, allowed)
    for key in table.partition_keys:
        if key not in [c.name for c in table.physical_columns]:
            raise FlinkSqlError(f"Partition column '{key}' not defined in the table schema. "
                                f"Available columns: {[c.name for c in table.physical_columns]}")
    standard = options.get("json.timestamp-format.standard", "SQL")
    if fmt == "json" and standard.upper() not in ("SQL", "ISO-8601", "ISO-8601-WITH-OFFSET"):
        raise FlinkSqlError(f"Unsupported value '{standard}' for timestamp-format.standard. "
                            "Supported values are [SQL, ISO-8601, ISO-8601-WITH-OFFSET].")
    if fmt == "raw":
        check_raw(file_row_type([(c.name, parse_type(c.type or ""))
                                 for c in table.physical_columns
                                 if c.name not in table.partition_keys]))


def _validate_datagen(table: CatalogTable) -> None:
    options = table.options
    names = [c.name for c in table.physical_columns]
    allowed = _COMMON | DATAGEN_OPTIONAL | {f"fields.{n}.{o}" for n in names
                                            for o in DATAGEN_FIELD_OPTIONS}
    unknown = set(options) - allowed
    if unknown:
        raise _unsupported("datagen", unknown, allowed)
    for name in names:
        kind = options.get(f"fields.{name}.kind", "random")
        if kind not in ("random", "sequence"):
            raise FlinkSqlError(f"Unsupported generator kind '{kind}' of field '{name}': "
                                "'random' or 'sequence'")
        if kind == "sequence":
            for end in ("start", "end"):
                if f"fields.{name}.{end}" not in options:
                    raise FlinkSqlError(f"Could not find required property "
                                        f"'fields.{name}.{end}' for sequence generator.")
