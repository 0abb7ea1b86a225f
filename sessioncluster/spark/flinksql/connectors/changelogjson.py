"""Flink's changelog JSON formats of the ``filesystem`` connector: ``canal-json``,
``debezium-json``, ``maxwell-json`` and ``ogg-json``, as a sink.

Each record is one JSON line of the format's envelope around the row (the row encoded as the
``json`` format encodes it, the format's own ``<format>.timestamp-format.standard`` and
``<format>.encode.decimal-as-plain-number`` options taken as ``json``'s). Flink writes an update
as two records: ``-U`` as a delete and ``+U`` as an insert (recorded with Flink 2.3:
/work/briefs/data/lead30/cdcjson_probe.out), so a sink of these formats takes an updating query
in STREAMING mode, and an insert-only query in both modes.

Reading such a table is a changelog source: Flink refuses it in BATCH mode (its message, from
:func:`batch_source_refusal`); in STREAMING mode sessioncluster does not read it yet
(:func:`streaming_source_refusal`).
"""

from __future__ import annotations

from typing import Any, Callable

from sqlglot import exp

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
    return next((t for t in _read_tables(query, tables) if t.connector == "filesystem"
                 and is_changelog_format(t.options.get("format", ""))), None)


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
    """Why a STREAMING query cannot read ``table`` here (a changelog format's); None for
    another table."""
    fmt = table.options.get("format", "")
    if table.connector != "filesystem" or not is_changelog_format(fmt):
        return None
    return (f"Reading the table '{DEFAULT_PATH}.{table.name}' of format '{fmt}' (a changelog "
            "source) is not supported by sessioncluster yet: it writes Flink's changelog JSON "
            f"formats ({', '.join(CHANGELOG_FORMATS)}) into a filesystem sink, and reads none")

