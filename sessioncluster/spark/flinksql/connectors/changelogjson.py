"""Flink's changelog JSON formats of the ``filesystem`` connector: ``canal-json``,
``debezium-json``, ``maxwell-json`` and ``ogg-json``, as a sink.

Each record is one JSON line of the format's envelope around the row (the row encoded as the
``json`` format encodes it, the format's own ``<format>.timestamp-format.standard`` and
``<format>.encode.decimal-as-plain-number`` options taken as ``json``'s). Flink writes an update
as two records: ``-U`` as a delete and ``+U`` as an insert (recorded with Flink 2.3:
/work/briefs/data/lead30/cdcjson_probe.out), so a sink of these formats takes an updating query
in STREAMING mode, and an insert-only query in both modes.

Reading such a table is a changelog source: Flink refuses it in BATCH mode (its message, from
:func:`batch_source_refusal`); in STREAMING mode its records (:func:`file_records`, with their
positions: :func:`record_rows`) are a changelog table's (:mod:`.changelogsource`).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterator

from sqlglot import exp

from ....api.formats.base import FileFormatError, json_lines, local_path
from ....api.table.changelog_mode import CHANGELOG_VIEW_PREFIX
from ..dialect import cte_names, table_names
from ..model import DEFAULT_PATH, CatalogTable

#: the changelog formats, and how each writes a record of kind insert / delete around its row
CHANGELOG_FORMATS: dict[str, tuple[Callable[[str], str], Callable[[str], str]]] = {
    "canal-json": (lambda row: '{"data":[' + row + '],"type":"INSERT"}',
                   lambda row: '{"data":[' + row + '],"type":"DELETE"}'),
    "debezium-json": (lambda row: '{"before":null,"after":' + row + ',"op":"c"}',
                      lambda row: '{"before":' + row + ',"after":null,"op":"d"}'),
    "maxwell-json": (lambda row: '{"data":' + row + ',"type":"insert"}',
                     lambda row: '{"data":' + row + ',"type":"delete"}'),
    "ogg-json": (lambda row: '{"before":null,"after":' + row + ',"op_type":"I"}',
                 lambda row: '{"before":' + row + ',"after":null,"op_type":"D"}'),
}

#: the options of a changelog format that are the ``json`` encoder's
_JSON_OPTIONS = ("timestamp-format.standard", "encode.decimal-as-plain-number",
                 "map-null-key.mode", "map-null-key.literal")


def is_changelog_format(fmt: str) -> bool:
    """``fmt`` is one of Flink's changelog JSON formats."""
    return fmt in CHANGELOG_FORMATS


def is_changelog_table(table: CatalogTable) -> bool:
    """``table`` is a ``filesystem`` table of a changelog format."""
    return table.connector == "filesystem" and is_changelog_format(table.options.get("format", ""))


def json_options(fmt: str, options: dict[str, str]) -> dict[str, str]:
    """The ``json`` encoder's options of a changelog format's (``canal-json.x`` -> ``json.x``)."""
    return {f"json.{key}": options[f"{fmt}.{key}"] for key in _JSON_OPTIONS
            if f"{fmt}.{key}" in options}


def check_sink_options(fmt: str, options: dict[str, str]) -> str | None:
    """Flink's refusal of a changelog format's options for a sink; None when they are fine."""
    if fmt == "debezium-json" and options.get("debezium-json.schema-include", "").lower() == "true":
        return ("Debezium JSON serialization doesn't support 'debezium-json.schema-include' "
                "option been set to true.")
    return None


def record_encoder(fmt: str, row_line: Callable[[Any], str]) -> Callable[[list[Any]], bytes]:
    """A record (the row's values, its RowKind last) as its line of ``fmt``: ``row_line`` gives
    the row's JSON object."""
    insert, delete = CHANGELOG_FORMATS[fmt]

    def encode(record: list[Any]) -> bytes:
        *values, kind = record
        envelope = delete if kind in ("-U", "-D") else insert
        return envelope(row_line(values)).encode("utf-8")

    return encode


def _read_tables(query: Any, tables: dict[str, CatalogTable]) -> list[CatalogTable]:
    names = table_names(query) - cte_names(query)
    return [tables[n.lower()] for n in sorted(names) if n.lower() in tables]


def _changelog_table(query: Any, tables: dict[str, CatalogTable]) -> CatalogTable | None:
    return next((t for t in _read_tables(query, tables) if is_changelog_table(t)), None)


def batch_source_refusal(query: exp.Expr, tables: dict[str, CatalogTable]) -> str | None:
    """Flink's refusal of a BATCH query that reads a table of a changelog format; None for
    another."""
    table = _changelog_table(query, tables)
    if table is None:
        return None
    return ("Querying a table in batch mode is currently only possible for INSERT-only table "
            f"sources. But the source for table '{DEFAULT_PATH}.{table.name}' produces other "
            "changelog messages than just INSERT.")


def streaming_source_refusal(table: CatalogTable) -> str | None:
    """Why a STREAMING query cannot read ``table`` as it is here: a table of a changelog format
    not read as a changelog (by its stream name, ``changelogsource.stream_name``: a query
    planned on a path that does not apply its RowKinds); None for another table."""
    if not is_changelog_table(table) or table.name.startswith(CHANGELOG_VIEW_PREFIX):
        return None
    return (f"Reading the table '{DEFAULT_PATH}.{table.name}' of format "
            f"'{table.options['format']}' (a changelog "
            "source) is not supported by sessioncluster in this statement: its records' "
            "RowKinds would not be applied")



# -- reading --------------------------------------------------------------------------------------
Record = tuple[str, tuple[Any, ...]]


def _object(message: dict[str, Any], key: str) -> dict[str, Any]:
    """The message's JSON object ``key`` (a row before or after)."""
    value = message.get(key)
    if not isinstance(value, dict):
        raise ValueError(f'"{key}" is {json.dumps(value)}, not a JSON object')
    return value


def _merged(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """A canal/maxwell update's row before: its ``old`` fields over the row after."""
    return {**new, **(old or {})}


def _canal(message: dict[str, Any], row: Callable[[dict[str, Any]], tuple[Any, ...]]
           ) -> list[Record]:
    kind = message.get("type")
    data = message.get("data") or []
    if kind == "INSERT":
        return [("+I", row(d)) for d in data]
    if kind == "DELETE":
        return [("-D", row(d)) for d in data]
    if kind == "UPDATE":
        old = message.get("old") or [{}] * len(data)
        return [r for d, o in zip(data, old) for r in (("-U", row(_merged(o, d))), ("+U", row(d)))]
    if kind == "CREATE" or message.get("isDdl"):
        return []
    raise ValueError(f'Unknown "type" value "{kind}". The Canal JSON message is \'{message}\'')


def _debezium(message: dict[str, Any], row: Callable[[dict[str, Any]], tuple[Any, ...]]
              ) -> list[Record]:
    message = message.get("payload", message) if "schema" in message else message
    op = message.get("op")
    if op in ("c", "r"):
        return [("+I", row(_object(message, "after")))]
    if op == "u":
        return [("-U", row(_object(message, "before"))), ("+U", row(_object(message, "after")))]
    if op == "d":
        return [("-D", row(_object(message, "before")))]
    raise ValueError(f"Unknown \"op\" value \"{op}\". The Debezium JSON message is '{message}'")


def _maxwell(message: dict[str, Any], row: Callable[[dict[str, Any]], tuple[Any, ...]]
             ) -> list[Record]:
    kind, data = message.get("type"), message.get("data") or {}
    if kind == "insert":
        return [("+I", row(data))]
    if kind == "delete":
        return [("-D", row(data))]
    if kind == "update":
        return [("-U", row(_merged(message.get("old"), data))), ("+U", row(data))]
    raise ValueError(f"Unknown \"type\" value \"{kind}\". The Maxwell JSON message is '{message}'")


def _ogg(message: dict[str, Any], row: Callable[[dict[str, Any]], tuple[Any, ...]]
         ) -> list[Record]:
    op = message.get("op_type")
    if op == "I":
        return [("+I", row(_object(message, "after")))]
    if op == "U":
        return [("-U", row(_object(message, "before"))), ("+U", row(_object(message, "after")))]
    if op == "D":
        return [("-D", row(_object(message, "before")))]
    if op == "T":  # a truncate: no row
        return []
    raise ValueError(f"Unknown \"op_type\" value \"{op}\". The Ogg JSON message is '{message}'")


_DECODERS = {"canal-json": _canal, "debezium-json": _debezium, "maxwell-json": _maxwell,
             "ogg-json": _ogg}


def file_records(path: str, fmt: str, row: Callable[[dict[str, Any]], tuple[Any, ...]],
                 ignore_parse_errors: bool) -> Iterator[Record]:
    """The records of a file of the changelog format ``fmt`` in their order, ``(kind, values)``
    (``row`` makes a row's values of its JSON object); a message that does not parse fails
    naming the file and the line, or is skipped with ``<format>.ignore-parse-errors``."""
    decode = _DECODERS[fmt]
    for number, line, message in json_lines(path):
        try:
            if isinstance(message, ValueError):
                raise message
            if not isinstance(message, dict):
                raise ValueError(f"not a JSON object: {line.strip()!r}")
            records = decode(message, row)
        except (ValueError, KeyError, TypeError, ArithmeticError, AttributeError) as exc:
            if ignore_parse_errors:
                continue
            raise FileFormatError(f"{local_path(path)}, line {number}: Corrupt {fmt} "
                                  f"message '{line.rstrip()}': {exc}") from None
        yield from records


#: the bits of a record's position that number it within its file (the rest: the file's
#: modification time in ms): records in the order of their files, then of their lines
_LINE_BITS = 22


def record_rows(fmt: str, row: Callable[[dict[str, Any]], tuple[Any, ...]],
                ignore_parse_errors: bool) -> Callable[[str], Iterator[tuple[Any, ...]]]:
    """A reader of a file's records as rows: the values, the RowKind, the record's position
    (increasing over the files in the order they were written, then over their lines)."""
    def read(path: str) -> Iterator[tuple[Any, ...]]:
        base = (os.stat(local_path(path)).st_mtime_ns // 1_000_000) << _LINE_BITS
        for n, (kind, values) in enumerate(file_records(path, fmt, row, ignore_parse_errors)):
            yield (*values, kind, base + n)

    return read
