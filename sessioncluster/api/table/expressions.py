"""PyFlink's expression functions (``pyflink.table.expressions``): ``col``, ``lit``, ``call``
and the built-in functions, each giving an :class:`~.expression.Expression` rendered to Flink
SQL text.

>>> (col('a') + 1).to_sql(), col('b').sum.alias('s').to_sql()
('(`a` + 1)', 'SUM(`b`) AS `s`')
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .expression import Expression, call_of, lit, to_expr
from .jsonexpressions import (
    JsonOnNull,
    json_array_agg_sql,
    json_constructor_sql,
    json_object_agg_sql,
)
from .sqltext import RenderContext, quote_identifier
from .types import DataType
from .units import TimePointUnit


def col(name: str) -> Expression:
    """The column ``name`` (``*`` for all columns)."""
    if name == "*":
        return Expression(lambda c: "*", "*")
    return Expression(lambda c: quote_identifier(name), name, kind="column")


def call(f: Any, *args: Any) -> Expression:
    """A call of the function named ``f`` (a system or catalog function) on ``args``."""
    if not isinstance(f, str):
        if callable(f) and hasattr(f, "sql_name"):  # a udf/udtf/udaf wrapper
            return f(*args)
        raise TypeError(f"call() takes a function name or a Python function made by udf(), "
                        f"udtf() or udaf(), not {f!r}")
    return call_of(f, *args)


def call_sql(sql_expression: str) -> Expression:
    """A Flink SQL expression given as text (inlined as it is)."""
    return Expression(lambda c: f"({sql_expression})")


def and_(predicate0: Any, predicate1: Any, *predicates: Any) -> Expression:
    parts = [to_expr(p) for p in (predicate0, predicate1, *predicates)]
    return Expression(lambda c: "(" + " AND ".join(p.to_sql(c) for p in parts) + ")")


def or_(predicate0: Any, predicate1: Any, *predicates: Any) -> Expression:
    parts = [to_expr(p) for p in (predicate0, predicate1, *predicates)]
    return Expression(lambda c: "(" + " OR ".join(p.to_sql(c) for p in parts) + ")")


def not_(expression: Any) -> Expression:
    return ~to_expr(expression)


def if_then_else(condition: Any, if_true: Any, if_false: Any) -> Expression:
    """``CASE WHEN condition THEN if_true ELSE if_false END``."""
    return to_expr(condition).then(if_true, if_false)


def coalesce(*args: Any) -> Expression:
    return call_of("COALESCE", *args)


def concat(first: Any, *others: Any) -> Expression:
    return call_of("CONCAT", first, *others)


def concat_ws(separator: Any, first: Any, *others: Any) -> Expression:
    return call_of("CONCAT_WS", separator, first, *others)


def _constant(text: str) -> Callable[[], Expression]:
    return lambda: Expression(lambda c: text)


current_date = _constant("CURRENT_DATE")
current_time = _constant("CURRENT_TIME")
current_timestamp = _constant("CURRENT_TIMESTAMP")
local_time = _constant("LOCALTIME")
local_timestamp = _constant("LOCALTIMESTAMP")
uuid = _constant("UUID()")
pi = _constant("PI()")
e = _constant("E()")


def current_database() -> Expression:
    """``CURRENT_DATABASE()``: the current database's name."""
    return Expression(lambda c: "CURRENT_DATABASE()")


def source_watermark() -> Expression:
    """``SOURCE_WATERMARK()``: a Schema's watermark strategy taking the source's watermarks
    (``Schema.new_builder().watermark('ts', source_watermark())``)."""
    return Expression(lambda c: "SOURCE_WATERMARK()")


def temporal_overlaps(left_time_point: Any, left_temporal: Any, right_time_point: Any,
                      right_temporal: Any) -> Expression:
    """Whether two anchored time intervals overlap (``(l, lt) OVERLAPS (r, rt)``); a temporal is
    a time point or an interval from its time point."""
    parts = [to_expr(x) for x in (left_time_point, left_temporal, right_time_point,
                                  right_temporal)]

    def render(c: RenderContext) -> str:
        a, b, x, y = (p.to_sql(c) for p in parts)
        return f"(({a}, {b}) OVERLAPS ({x}, {y}))"
    return Expression(render)


def current_watermark(rowtimeAttribute: Any) -> Expression:  # noqa: N803 - PyFlink's name
    return call_of("CURRENT_WATERMARK", rowtimeAttribute)


def to_date(date_str: Any, format: Any = None) -> Expression:
    return call_of("TO_DATE", date_str, *([] if format is None else [format]))


def to_timestamp(timestamp_str: Any, format: Any = None) -> Expression:
    return call_of("TO_TIMESTAMP", timestamp_str, *([] if format is None else [format]))


def to_timestamp_ltz(numeric_epoch_time: Any, precision: Any) -> Expression:
    return call_of("TO_TIMESTAMP_LTZ", numeric_epoch_time, precision)


def date_format(timestamp: Any, format: Any) -> Expression:
    return call_of("DATE_FORMAT", timestamp, format)


def timestamp_diff(time_point_unit: TimePointUnit, time_point1: Any, time_point2: Any
                   ) -> Expression:
    a, b = to_expr(time_point1), to_expr(time_point2)
    return Expression(lambda c: f"TIMESTAMPDIFF({time_point_unit.name}, {a.to_sql(c)}, "
                                f"{b.to_sql(c)})")


def convert_tz(date_str: Any, tz_from: Any, tz_to: Any) -> Expression:
    return call_of("CONVERT_TZ", date_str, tz_from, tz_to)


def from_unixtime(unixtime: Any, format: Any = None) -> Expression:
    return call_of("FROM_UNIXTIME", unixtime, *([] if format is None else [format]))


def unix_timestamp(date_str: Any = None, format: Any = None) -> Expression:
    args = [a for a in (date_str, format) if a is not None]
    return call_of("UNIX_TIMESTAMP", *args)


def json(value: Any) -> Expression:
    """``JSON(value)``: a JSON text inserted as it is into a ``json_object`` value or a
    ``json_array`` element (NULL for NULL or '')."""
    return call_of("JSON", value)


def json_string(value: Any) -> Expression:
    """``JSON_STRING(value)``: the value serialized as JSON."""
    return call_of("JSON_STRING", value)


def json_object(on_null: JsonOnNull = JsonOnNull.NULL, *args: Any) -> Expression:
    """``JSON_OBJECT(KEY k VALUE v, ... <on_null> ON NULL)`` of keys and values alternately."""
    items = [to_expr(a) for a in args]
    return Expression(lambda c: json_constructor_sql("JSON_OBJECT",
                                                     [i.to_sql(c) for i in items], on_null))


def json_array(on_null: JsonOnNull = JsonOnNull.ABSENT, *args: Any) -> Expression:
    """``JSON_ARRAY(v, ... <on_null> ON NULL)``."""
    items = [to_expr(a) for a in args]
    return Expression(lambda c: json_constructor_sql("JSON_ARRAY",
                                                     [i.to_sql(c) for i in items], on_null))


def json_object_agg(on_null: JsonOnNull, key_expr: Any, value_expr: Any) -> Expression:
    """The aggregate ``JSON_OBJECTAGG(KEY key VALUE value <on_null> ON NULL)``: the JSON object
    of a group's keys and values (a duplicate key fails the job, as in Flink)."""
    key, value = to_expr(key_expr), to_expr(value_expr)
    return Expression(lambda c: c.note(json_object_agg_sql(key.to_sql(c), value.to_sql(c),
                                                           on_null)),
                      aggregate=("JSON_OBJECTAGG", (key, value)))


def json_array_agg(on_null: JsonOnNull, item_expr: Any) -> Expression:
    """The aggregate ``JSON_ARRAYAGG(item <on_null> ON NULL)``: the JSON array of a group's
    items."""
    item = to_expr(item_expr)
    return Expression(lambda c: c.note(json_array_agg_sql(item.to_sql(c), on_null)),
                      aggregate=("JSON_ARRAYAGG", (item,)))


def array(head: Any, *tail: Any) -> Expression:
    items = [to_expr(x) for x in (head, *tail)]
    return Expression(lambda c: f"ARRAY[{', '.join(i.to_sql(c) for i in items)}]")


def row(head: Any, *tail: Any) -> Expression:
    return call_of("ROW", head, *tail)


def map_(key: Any, value: Any, *tail: Any) -> Expression:
    items = [to_expr(x) for x in (key, value, *tail)]
    return Expression(lambda c: f"MAP[{', '.join(i.to_sql(c) for i in items)}]")


def map_from_arrays(key: Any, value: Any) -> Expression:
    """``MAP_FROM_ARRAYS(keys, values)``: the map of two arrays of the same length."""
    return call_of("MAP_FROM_ARRAYS", key, value)


def rand(seed: Any = None) -> Expression:
    return call_of("RAND", *([] if seed is None else [seed]))


def rand_integer(bound: Any, seed: Any = None) -> Expression:
    return call_of("RAND_INTEGER", *([] if seed is None else [seed]), bound)


def atan2(y: Any, x: Any) -> Expression:
    return call_of("ATAN2", y, x)


def negative(v: Any) -> Expression:
    return -to_expr(v)


def log(v: Any, base: Any = None) -> Expression:
    return to_expr(v).log(base)


def null_of(data_type: DataType) -> Expression:
    return Expression(lambda c: f"CAST(NULL AS {data_type})")


def row_interval(rows: int) -> Expression:
    return lit(rows).rows


def range_(start: int | str | Expression, end: int | str | Expression) -> Expression:
    """The columns from ``start`` to ``end`` (1-based indices or names, both included) of
    the table read, for :func:`with_columns`/:func:`without_columns`."""
    e = Expression(lambda c: f"range_({start}, {end})", kind="range")
    e.value = (start, end)
    return e


def with_all_columns() -> Expression:
    """All the columns of the table read (``*``)."""
    return col("*")


def descriptor(*column_names: str) -> Expression:
    """``DESCRIPTOR(col1, ...)``: a list of column names, for a table function's argument."""
    return Expression(lambda c: f"DESCRIPTOR({', '.join(map(quote_identifier, column_names))})")


def lag(expr: Any, offset: int = 1, default: Any = None) -> Expression:
    """``LAG(expr, offset[, default])``: the value ``offset`` rows before, over a window."""
    return call_of("LAG", expr, offset, *([] if default is None else [default]))


def lead(expr: Any, offset: int = 1, default: Any = None) -> Expression:
    """``LEAD(expr, offset[, default])``: the value ``offset`` rows after, over a window."""
    return call_of("LEAD", expr, offset, *([] if default is None else [default]))


def with_columns(head: Any, *tails: Any) -> Expression:
    """The columns named by indices (1-based), ``col(name)``'s and range_ expressions, in that
    order (Flink's ``withColumns``)."""
    return column_selection(True, (head, *tails))


def without_columns(head: Any, *tails: Any) -> Expression:
    """The table's other columns, in the table's order (Flink's ``withoutColumns``)."""
    return column_selection(False, (head, *tails))


def column_selection(keep: bool, items: Sequence[Any]) -> Expression:
    """The expression of a with_columns/without_columns: its columns' names, quoted and joined,
    once the operation it is used in gives the table's columns (``RenderContext.columns``)."""
    for item in items:
        if not isinstance(item, int) and not (isinstance(item, Expression)
                                              and item.kind in ("range", "column")):
            raise ValueError("The parameters of withColumns() or withoutColumns() only accept "
                             "column names or column indices.")

    def names(c: RenderContext) -> list[str]:
        if c.columns is None:
            raise ValueError("with_columns()/without_columns() select columns of the table an "
                             "operation reads: use them in select, add_columns, "
                             "add_or_replace_columns or group_by")
        columns = c.columns()
        chosen = [n for item in items for n in _selected(item, columns)]
        return chosen if keep else [n for n in columns if n not in chosen]

    e = Expression(lambda c: ", ".join(quote_identifier(n) for n in names(c)), kind="columns")
    e.value = names
    return e


def _selected(item: Any, columns: list[str]) -> list[str]:
    if isinstance(item, int):
        return _between(item, item, columns)
    if item.kind != "range":
        if item.name not in columns:
            raise ValueError(f"with_columns(): the table has no column {item.name!r}; its "
                             f"columns: {columns}")
        return [item.name]
    start, end = (x.name if isinstance(x, Expression) else x for x in item.value)
    if isinstance(start, int) and isinstance(end, int):
        return _between(start, end, columns)
    if start not in columns or end not in columns or columns.index(start) > columns.index(end):
        raise ValueError(f"The start name:{start} of withColumns() or withoutColumns() should "
                         f"not behind the end:{end}.")
    return columns[columns.index(start):columns.index(end) + 1]


def _between(start: int, end: int, columns: list[str]) -> list[str]:
    if start > end:
        raise ValueError(f"The start:{start} of withColumns() or withoutColumns() should not "
                         f"bigger than end:{end}.")
    if start < 1 or end > len(columns):
        raise ValueError(f"range_({start}, {end}) of withColumns() or withoutColumns(): the "
                         f"table has {len(columns)} columns, numbered from 1")
    return columns[start - 1:end]


#: the bounds of an over window (``Over...preceding(UNBOUNDED_RANGE)``)
UNBOUNDED_ROW = Expression(lambda c: "UNBOUNDED", interval=("UNBOUNDED", "ROWS"))
UNBOUNDED_RANGE = Expression(lambda c: "UNBOUNDED", interval=("UNBOUNDED", "RANGE"))
CURRENT_ROW = Expression(lambda c: "CURRENT ROW", interval=("CURRENT", "ROWS"))
CURRENT_RANGE = Expression(lambda c: "CURRENT ROW", interval=("CURRENT", "RANGE"))


def expressions_sql(exprs: Sequence[Any], ctx: RenderContext | None = None) -> str:
    """``exprs`` (Expressions or column names) joined by commas, as Flink SQL."""
    return ", ".join(as_expression(x).to_sql(ctx) for x in exprs)


def as_expression(x: Any) -> Expression:
    """An Expression, or a column name given as a string."""
    if isinstance(x, Expression):
        return x
    if isinstance(x, str):
        return col(x)
    raise TypeError(f"expected an Expression (col('a'), lit(1), ...), not {x!r}")
