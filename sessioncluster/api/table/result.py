"""PyFlink's ``TableResult`` and ``ResultKind``, and Flink's tableau printing.

A TableResult wraps what the JobManager answered for one statement (a ``SqlStatementResult``:
job id, result kind, column names and Flink types, the rows as Arrow, their row kinds).
``print()`` draws Flink's tableau layout as ``TableEnvironmentImpl`` does: column widths from the
column types (``table.display.max-column-width``, 30 by default), every cell right-aligned, an
``op`` column of row kinds in STREAMING mode, then ``N rows in set`` (or ``Empty set``).
"""

from __future__ import annotations

import datetime
import decimal
import sys
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterator, Protocol, Sequence, TextIO

from ...common.types import Row, RowKind
from .typeparser import parse_type
from .types import DataType

#: how Flink prints a null cell
NULL_VALUE = "<NULL>"
#: Flink's ``table.display.max-column-width`` default
DEFAULT_MAX_COLUMN_WIDTH = 30
_TRUNCATED = "..."


class ResultKind(Enum):
    """What a statement returned: nothing but success (DDL), or content (a query, SHOW...)."""

    SUCCESS = 0
    SUCCESS_WITH_CONTENT = 1


class ExplainDetail(Enum):
    """Extra details of an EXPLAIN (Flink's names)."""

    ESTIMATED_COST = 0
    CHANGELOG_MODE = 1
    JSON_EXECUTION_PLAN = 2
    PLAN_ADVICE = 3


@dataclass(frozen=True)
class WatermarkSpec:
    """A catalog table's ``WATERMARK FOR rowtime AS expression`` (its expression quoted as
    Flink prints it), with the rowtime column's type."""

    rowtime: str
    type_text: str
    expression: str


class TableSchema:
    """Column names and their Flink SQL types (PyFlink's ``TableSchema``); a catalog table's
    (``from_path``) with its computed columns' expressions (``extras``: ``AS PROCTIME()``) and
    its watermark, as Flink prints them."""

    def __init__(self, field_names: Sequence[str], data_types: Sequence[str],
                 extras: Sequence[str | None] = (),
                 watermarks: Sequence[WatermarkSpec] = ()) -> None:
        self._names = list(field_names)
        self._types = list(data_types)
        self._extras = list(extras) or [None] * len(self._names)
        self._watermarks = list(watermarks)

    def get_field_names(self) -> list[str]:
        return list(self._names)

    def get_field_count(self) -> int:
        return len(self._names)

    # PyFlink's ResolvedSchema names the same things
    def get_column_names(self) -> list[str]:
        return self.get_field_names()

    def get_column_count(self) -> int:
        return self.get_field_count()

    def get_column_data_types(self) -> list[DataType]:
        return self.get_field_data_types()

    def get_field_data_types(self) -> list[DataType]:
        """The DataType of each column (``DataTypes.BIGINT()``, ...)."""
        return [_data_type(t) for t in self._types]

    def get_field_data_type(self, field: int | str) -> DataType | None:
        """The DataType of a column given by position or name (None if there is none)."""
        index = field if isinstance(field, int) else self._names.index(field)
        return _data_type(self._types[index]) if 0 <= index < len(self._types) else None

    def get_field_type_texts(self) -> list[str]:
        """The Flink SQL type text of each column (``BIGINT``, ``TIMESTAMP(3)``)."""
        return list(self._types)

    def get_extras(self) -> list[str | None]:
        """Each column's extras as Flink prints them after its type (``AS PROCTIME()``)."""
        return list(self._extras)

    def get_watermark_specs(self) -> list[WatermarkSpec]:
        """The watermarks of a catalog table's schema."""
        return list(self._watermarks)

    def _typed(self) -> list[str]:
        """Each column's type text with its extras."""
        return [f"{t} {e}" if e else t for t, e in zip(self._types, self._extras)]

    def __str__(self) -> str:
        """Flink's legacy TableSchema text: ``root`` then `` |-- name: TYPE`` lines, and
        `` |-- WATERMARK FOR ts: TYPE AS expression``."""
        lines = [f"{n}: {t}" for n, t in zip(self._names, self._typed())]
        lines += [f"WATERMARK FOR {w.rowtime}: {w.type_text} AS {w.expression}"
                  for w in self._watermarks]
        return "root\n" + "".join(f" |-- {line}\n" for line in lines)

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TableSchema) and self._names == other._names
                and self._types == other._types)

    __hash__ = None  # type: ignore[assignment]


#: the markers of a time attribute's type text (``TIMESTAMP(3) *ROWTIME*``), as Flink prints it
TIME_ATTRIBUTE_MARKERS = (" *ROWTIME*", " *PROCTIME*")


def without_marker(type_text: str) -> str:
    """A column's type text, its time attribute's marker left out."""
    for marker in TIME_ATTRIBUTE_MARKERS:
        type_text = type_text.removesuffix(marker)
    return type_text


def _data_type(type_text: str) -> DataType:
    """The DataType of a column's type text, a time attribute's marker left out."""
    return parse_type(without_marker(type_text))


class ResolvedSchema(TableSchema):
    """The same columns as Flink's ResolvedSchema prints them (``print_schema()``)."""

    def __str__(self) -> str:
        lines = [f"  `{n}` {t}" for n, t in zip(self._names, self._typed())]
        lines += [f"  WATERMARK FOR `{w.rowtime}`: {w.type_text} AS {w.expression}"
                  for w in self._watermarks]
        return "(\n" + ",\n".join(lines) + "\n)"

    __repr__ = __str__


class StatementRunner(Protocol):
    """What a Table and a StatementSet need of their TableEnvironment."""

    def execute_sql(self, stmt: str) -> "TableResult":
        """Run one Flink SQL statement."""

    def query_schema(self, query: str) -> "TableSchema":
        """The columns of a query and their Flink types."""

    def explain_sql(self, stmt: str, *extra_details: Any) -> str:
        """Flink's plan of a statement."""

    def create_temporary_view(self, view_path: str, table: Any, *fields: Any) -> None:
        """Register a Table as a temporary view."""

    def create_temporary_table(self, path: str, descriptor: Any) -> None:
        """Create a temporary table of a TableDescriptor."""


class ChangesDroppedError(RuntimeError):
    """A streaming query's changelog has a gap: its reader fell behind the job's bounded
    result buffer. Flink's collect() never drops a change, so neither does this silently."""


class CloseableIterator:
    """The rows of a result; ``with table_result.collect() as rows: ...`` as in PyFlink.
    Closing the rows of a streaming query cancels its job (``on_close``)."""

    def __init__(self, rows: Iterator[Row], on_close: Callable[[], None] | None = None) -> None:
        self._rows = rows
        self._on_close = on_close

    def __iter__(self) -> "CloseableIterator":
        return self

    def __next__(self) -> Row:
        return next(self._rows)

    def close(self) -> None:
        self._rows = iter(())
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()

    def __enter__(self) -> "CloseableIterator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TableResult:
    """The result of ``execute_sql``, ``Table.execute``, ``execute_insert`` or a statement set."""

    def __init__(self, result: Any, *, streaming: bool = False,
                 job_client: Callable[[str], Any] | None = None,
                 max_column_width: int = DEFAULT_MAX_COLUMN_WIDTH) -> None:
        #: the JobManager's answer (``SqlStatementResult``)
        self.result = result
        self.streaming = streaming
        self._job_client_of = job_client
        self.max_column_width = max_column_width

    # -- PyFlink's API -------------------------------------------------------------------------
    def get_job_client(self) -> Any:
        """The JobClient of the job the statement ran as, or None (DDL, SHOW...)."""
        job_id = getattr(self.result, "job_id", "") or ""
        if not job_id or self._job_client_of is None:
            return None
        return self._job_client_of(job_id)

    def wait(self, timeout_ms: int | None = None) -> None:
        """Wait until the statement's job, if any, has finished. A streaming INSERT's
        ``print`` sinks' lines are printed here as they come (an interrupt cancels the job), as
        an attached DataStream job's ``print()`` lines are."""
        client = self.get_job_client()
        if client is None:
            return
        if getattr(self.result, "prints", False) and timeout_ms is None:
            client.print_statement_lines()
        client.wait(None if timeout_ms is None else timeout_ms / 1000)

    def get_table_schema(self) -> TableSchema:
        return TableSchema(self.result.columns, self.result.column_types)

    def get_resolved_schema(self) -> ResolvedSchema:
        return ResolvedSchema(self.result.columns, self.result.column_types)

    def get_result_kind(self) -> ResultKind:
        return ResultKind[self.result.result_kind]

    def is_unbounded(self) -> bool:
        """True for a streaming query over an unbounded source: its rows never end."""
        return bool(getattr(self.result, "unbounded", False))

    def is_live(self) -> bool:
        """True for a streaming query's result: its rows come from its job as it runs."""
        return bool(getattr(self.result, "live", ""))

    def collect(self) -> CloseableIterator:
        """The rows, each a named ``Row`` with its ``RowKind`` (``+I`` unless the statement
        produced a changelog). A streaming query's come as its job produces them; closing the
        iterator cancels the job, and it ends when the job does."""
        if self.is_live():
            return self._live_rows()
        return CloseableIterator(iter(self.rows()))

    def _live_rows(self) -> CloseableIterator:
        client = self.get_job_client()
        if client is None:
            raise RuntimeError("this TableResult has no job to read a streaming result from")
        stream = client.stream()

        def rows() -> Iterator[Row]:
            for kind, values in stream:
                if stream.dropped:  # a gap in the changelog: every row after it may be wrong
                    stream.close()
                    raise ChangesDroppedError(
                        f"{stream.dropped} changes of this streaming query's result were "
                        f"dropped unread: the JobManager keeps a bounded amount of unread "
                        f"result (64 MiB), and this reader fell behind its job; the job is "
                        f"cancelled. Read the rows as they come, or write the query into a "
                        f"sink table (INSERT INTO).")
                yield changelog_row(kind, values)

        return CloseableIterator(rows(), stream.close)

    def rows(self) -> list[Row]:
        """The rows, as :meth:`collect` gives them, in a list."""
        values = arrow_rows(self.result.table)
        kinds = self.result.row_kinds or [RowKind.INSERT] * len(values)
        return [_kind_row(vals, kind) for vals, kind in zip(values, kinds)]

    def print(self, file: TextIO | None = None) -> None:
        """Print the result in Flink's tableau layout (to stdout); a streaming query's rows
        as they come, until its job ends (an interrupt cancels it)."""
        out = file or sys.stdout
        if self.is_live():
            with self.collect() as rows:
                print_tableau_rows(self.result.columns, self.result.column_types, rows, out,
                                   self.max_column_width)
            return
        out.write(self.tableau())

    def tableau(self) -> str:
        """The text :meth:`print` prints: a query's rows with widths from their types (and the
        ``op`` column in STREAMING); what ran no job (DDL, SHOW, DESCRIBE...) with widths from
        the data, as Flink's ``TableResultImpl`` for those statements."""
        columns, types = list(self.result.columns), list(self.result.column_types)
        rows = arrow_rows(self.result.table)
        if not columns:
            return format_tableau(["result"], ["STRING"], [["OK"]], None, widths_from_data=True)
        if not getattr(self.result, "job_id", ""):
            return format_tableau(columns, types, rows, None, widths_from_data=True,
                                  max_column_width=sys.maxsize)
        kinds = self.result.row_kinds if self.streaming else None
        if self.streaming and kinds is None:
            kinds = [RowKind.INSERT] * len(rows)
        return format_tableau(columns, types, rows, kinds, max_column_width=self.max_column_width)


_KINDS = {kind.short_string(): kind for kind in RowKind}


def changelog_row(kind: str, values: Sequence[Any]) -> Row:
    """A row of a streaming query's changelog (``+I``, ``-U``, ``+U``, ``-D`` and its values,
    which the JobManager sends as PyFlink gives them) as a ``Row`` with its ``RowKind``."""
    return _kind_row(values, _KINDS[kind])


def _kind_row(values: Sequence[Any], kind: RowKind) -> Row:
    """A collected row as PyFlink's: positional (no field names), with its RowKind."""
    r = Row(*values)
    r.set_row_kind(kind)
    return r


def print_tableau_rows(names: Sequence[str], types: Sequence[str], rows: Iterator[Row],
                       out: TextIO, max_column_width: int = DEFAULT_MAX_COLUMN_WIDTH) -> int:
    """Flink's tableau of a changelog, each row printed as it comes (widths from the types,
    as Flink's streaming print, so that they are known before the first row); the rows."""
    layout = TableauLayout.of_types(names, types, max_column_width, op=True)
    count = 0
    for row in rows:
        if count == 0:
            out.write(layout.header())
        cells = [row.get_row_kind().short_string(),
                 *[cell_string(v, t) for v, t in zip(row, types)]]
        out.write(layout.row(cells))
        out.flush()
        count += 1
    if count == 0:
        out.write("Empty set\n")
        return 0
    out.write(f"{layout.border}\n{count} {'rows' if count > 1 else 'row'} in set\n")
    return count


@dataclass(frozen=True, slots=True)
class TableauLayout:
    """The columns of Flink's tableau: names and widths, for rows printed one at a time."""

    names: list[str]
    widths: list[int]

    @classmethod
    def of_types(cls, names: Sequence[str], types: Sequence[str],
                 max_column_width: int = DEFAULT_MAX_COLUMN_WIDTH,
                 op: bool = False) -> "TableauLayout":
        """Widths from the types (Flink's ``columnWidthsByType``: known before any row), with
        a leading ``op`` column when ``op``."""
        widths = [max(len(n), _type_width(t, max_column_width), len(NULL_VALUE))
                  for n, t in zip(names, types)]
        return cls(["op", *names], [2, *widths]) if op else cls(list(names), widths)

    @property
    def border(self) -> str:
        return "+" + "".join("-" * (w + 2) + "+" for w in self.widths)

    def header(self) -> str:
        """The border, the column names, the border (each line ended)."""
        return "\n".join([self.border, _tableau_row(self.names, self.widths), self.border]) + "\n"

    def row(self, cells: Sequence[str]) -> str:
        """One row of cells (already text), its line ended."""
        return _tableau_row(cells, self.widths) + "\n"


# -- Arrow to Python ---------------------------------------------------------------------------
def arrow_rows(table: Any) -> list[list[Any]]:
    """The rows of a pyarrow Table as lists of PyFlink values (structs become Rows)."""
    columns = [[_arrow_value(v, c.type) for v in c.to_pylist()] for c in table.columns]
    return [list(r) for r in zip(*columns)] if columns else []


def _arrow_value(v: Any, arrow_type: Any) -> Any:
    """``v`` of an Arrow column of ``arrow_type`` as PyFlink gives it: a MAP (pairs in Arrow,
    an empty one ``[]``) a dict, a struct a Row, through lists and nesting."""
    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_map(arrow_type):
        return {_arrow_value(k, arrow_type.key_type): _arrow_value(x, arrow_type.item_type)
                for k, x in v}
    if pa.types.is_struct(arrow_type):
        r = Row(*(_arrow_value(v[f.name], f.type) for f in arrow_type))
        r.set_field_names([f.name for f in arrow_type])
        return r
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) \
            or pa.types.is_fixed_size_list(arrow_type):
        return [_arrow_value(x, arrow_type.value_type) for x in v]
    return v


# -- Flink's tableau layout --------------------------------------------------------------------
def format_tableau(names: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]],
                   row_kinds: Sequence[RowKind] | None, *,
                   max_column_width: int = DEFAULT_MAX_COLUMN_WIDTH,
                   widths_from_data: bool = False) -> str:
    """Rows in Flink's tableau layout; with ``row_kinds`` an ``op`` column leads."""
    if not rows:
        return "Empty set\n"
    cells = [[cell_string(v, t) for v, t in zip(r, types)] for r in rows]
    header = list(names)
    if row_kinds is not None:
        header = ["op", *header]
        cells = [[k.short_string(), *c] for k, c in zip(row_kinds, cells)]
    if widths_from_data:
        layout = TableauLayout(header, [
            min(max([display_width(h)] + [display_width(c[i]) for c in cells]), max_column_width)
            for i, h in enumerate(header)])
    else:
        layout = TableauLayout.of_types(names, types, max_column_width, op=row_kinds is not None)
    return (layout.header() + "".join(layout.row(c) for c in cells)
            + f"{layout.border}\n{len(cells)} {'rows' if len(cells) > 1 else 'row'} in set\n")


def _tableau_row(cols: Sequence[str], widths: Sequence[int]) -> str:
    out = "|"
    for col, width in zip(cols, widths):
        w = display_width(col)
        if w <= width:
            out += " " + " " * (width - w) + col + " |"
        else:
            out += " " + _truncate(col, width - len(_TRUNCATED)) + _TRUNCATED + " |"
    return out


def _truncate(text: str, target: int) -> str:
    passed, i = 0, 0
    for i, ch in enumerate(text):
        passed += 2 if _full_width(ch) else 1
        if passed > target:
            break
    else:
        i = len(text)
    sub = text[:i]
    return " " * max(target - display_width(sub), 0) + sub


def _full_width(ch: str) -> bool:
    import unicodedata
    return unicodedata.east_asian_width(ch) in ("F", "W")


def display_width(text: str) -> int:
    """The width of ``text`` on a terminal (full-width characters count twice), as Flink's."""
    return len(text) + sum(1 for ch in text if _full_width(ch))


def _type_root(type_text: str) -> tuple[str, int | None]:
    """The root of a Flink type text and its first parameter: ``DECIMAL(10, 2)`` -> (DECIMAL, 10)."""
    text = type_text.strip().upper().replace(" NOT NULL", "")
    root, _, rest = text.partition("(")
    root = root.split(" ")[0].strip()
    param = None
    if rest:
        first = rest.split(",")[0].split(")")[0].strip()
        param = int(first) if first.isdigit() else None
    return root, param


def _timestamp_width(precision: int) -> int:
    base = 19
    if precision == 0:
        return base
    return base + (4 if precision <= 3 else 7 if precision <= 6 else 10)


def _type_width(type_text: str, max_width: int) -> int:
    """Flink's ``columnWidthsByType``: the width a value of the type needs at most."""
    root, p = _type_root(type_text)
    fixed = {"TINYINT": 4, "SMALLINT": 6, "INT": 11, "INTEGER": 11, "BIGINT": 20,
             "BOOLEAN": 5, "DATE": 10}
    if root in fixed:
        return fixed[root]
    if root == "DECIMAL":
        return (10 if p is None else p) + 2
    if root == "TIME":
        precision = 0 if p is None else p
        return 8 if precision == 0 else precision + 9
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_width(6 if p is None else p)
    return max_width


def _java_double(v: float, single: bool = False) -> str:
    """A float as Java's ``Double.toString`` (``Float.toString`` when ``single``) writes it."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if single:
        import numpy as np
        text = repr(float(str(np.float32(v))))
    else:
        text = repr(v)
    if v != 0 and not 1e-3 <= abs(v) < 1e7:
        sign, digits, exp = decimal.Decimal(text).as_tuple()
        ds = "".join(map(str, digits)).rstrip("0") or "0"
        exponent = len(digits) + int(exp) - 1
        return f"{'-' if sign else ''}{ds[0]}.{ds[1:] or '0'}E{exponent}"
    return text


def cell_string(v: Any, type_text: str = "") -> str:
    """A value as Flink's ``CAST(v AS STRING)`` writes it in a printed cell."""
    if v is None:
        return NULL_VALUE
    root, p = _type_root(type_text) if type_text else ("", None)
    return _to_string(v, root, p)


def _to_string(v: Any, root: str = "", p: int | None = None) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        return _java_double(v, single=root == "FLOAT")
    if isinstance(v, decimal.Decimal):
        return f"{v:f}"
    if isinstance(v, datetime.datetime):
        precision = 6 if p is None else p
        text = v.strftime("%Y-%m-%d %H:%M:%S")
        fraction = f"{v.microsecond:06d}000"[:9].rstrip("0")
        fraction = fraction.ljust(min(precision, 9), "0")
        return text + ("." + fraction if fraction else "")
    if isinstance(v, datetime.time):
        text = v.strftime("%H:%M:%S")
        fraction = f"{v.microsecond:06d}".rstrip("0").ljust(p or 0, "0")
        return text + ("." + fraction if fraction else "")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", errors="replace")
    if isinstance(v, Row):
        return "(" + ", ".join(_to_string(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_to_string(k)}={_to_string(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_to_string(x) for x in v) + "]"
    return str(v)
