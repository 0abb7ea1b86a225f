"""PyFlink's expression DSL (``pyflink.table.expressions`` and ``pyflink.table.expression``),
rendered to Flink SQL text.

The client never parses SQL: an :class:`Expression` is a small tree that renders itself as Flink
SQL (``col('a') + 1`` -> ``(`a` + 1)``). Window properties (``col('w').start``) and over windows
(``.over(col('w'))``) render against a :class:`RenderContext` given by the Table operation.

>>> (col('a') + 1).to_sql(), col('b').sum.alias('s').to_sql()
('(`a` + 1)', 'SUM(`b`) AS `s`')
"""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Sequence

from .jsonexpressions import (
    JsonExistsOnError,
    JsonOnNull,
    JsonQueryOnEmptyOrError,
    JsonQueryWrapper,
    JsonType,
    JsonValueOnEmptyOrError,
    is_json_sql,
    json_constructor_sql,
    json_exists_sql,
    json_query_sql,
    json_value_sql,
    value_behaviour,
)
from .types import DataType, DataTypes


def quote_identifier(name: str) -> str:
    """``name`` as a Flink SQL identifier in backticks (a backtick doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_path(path: str) -> str:
    """A dotted table path (``cat.db.t``) with each part quoted."""
    return ".".join(quote_identifier(p) for p in path.split("."))


def quote_string(text: str) -> str:
    """``text`` as a Flink SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


@dataclass
class RenderContext:
    """What an expression needs from the operation it appears in."""

    #: the alias of the group window (``Tumble...alias('w')``) of a window aggregation
    window_alias: str | None = None
    #: the OVER clause of each over window, by alias
    over_windows: dict[str, str] = field(default_factory=dict)
    #: aggregate calls and window properties in the order met, numbered as Flink's Table API
    #: numbers them (an unaliased one is the column ``EXPR$<n>``)
    named_calls: dict[str, int] = field(default_factory=dict)

    def note(self, text: str) -> str:
        """Number the aggregate or window property ``text`` (once); give it back."""
        self.named_calls.setdefault(text, len(self.named_calls))
        return text


class TimeIntervalUnit(Enum):
    """Units of time intervals (``extract``, ``floor``, ``ceil``)."""

    YEAR = 0
    YEAR_TO_MONTH = 1
    QUARTER = 2
    MONTH = 3
    WEEK = 4
    DAY = 5
    DAY_TO_HOUR = 6
    DAY_TO_MINUTE = 7
    DAY_TO_SECOND = 8
    HOUR = 9
    SECOND = 10
    HOUR_TO_MINUTE = 11
    HOUR_TO_SECOND = 12
    MINUTE = 13
    MINUTE_TO_SECOND = 14


class TimePointUnit(Enum):
    """Units of points in time (``timestamp_diff``)."""

    YEAR = 0
    MONTH = 1
    DAY = 2
    HOUR = 3
    MINUTE = 4
    SECOND = 5
    QUARTER = 6
    WEEK = 7
    MILLISECOND = 8
    MICROSECOND = 9


Renderer = Callable[[RenderContext], str]
_STRING = DataTypes.STRING()


class Expression:
    """A Table API expression: a column, a literal, or a call, rendered as Flink SQL."""

    def __init__(self, render: Renderer, name: str | None = None, *,
                 aggregate: tuple[str, tuple["Expression", ...]] | None = None,
                 interval: tuple[Any, str] | None = None, kind: str = "") -> None:
        self._render = render
        #: the column this expression names when not aliased (a plain column reference)
        self.name = name
        #: (function, arguments) of an aggregate call, for ``.distinct`` and ``.over``
        self.aggregate = aggregate
        #: (amount, unit) of an interval literal (``lit(10).seconds``, ``lit(2).rows``)
        self.interval = interval
        #: 'alias', 'asc', 'desc', 'literal' ... (what an operation may look for)
        self.kind = kind
        #: the Python value of a literal
        self.value: Any = None
        self.alias_of: str | None = None
        #: the column name Flink's Table API derives for this expression unaliased
        #: (``col('a').cast(BIGINT)`` -> ``a-BIGINT``), if any
        self.derived_name: str | None = None
        #: the Python function wrapper (``udf``/``udtf``/``udaf``'s) this expression calls
        self.udf: Any = None
        #: the expression an alias names, and the names (several: a function's result columns)
        self.aliased: Expression | None = None
        self.aliases: list[str] | None = None

    # -- rendering -----------------------------------------------------------------------------
    def to_sql(self, ctx: RenderContext | None = None) -> str:
        """This expression as Flink SQL text."""
        return self._render(ctx if ctx is not None else RenderContext())

    def __str__(self) -> str:
        return self.to_sql()

    def __repr__(self) -> str:
        return f"Expression({self.to_sql()!r})"

    def __bool__(self) -> bool:
        raise TypeError("an Expression has no truth value: use & | ~ (not and/or/not), e.g. "
                        "(col('a') > 1) & (col('b') < 2)")

    __hash__ = object.__hash__

    # -- operators -----------------------------------------------------------------------------
    def _infix(self, op: str, other: Any, reverse: bool = False) -> "Expression":
        left, right = (to_expr(other), self) if reverse else (self, to_expr(other))
        return Expression(lambda c: f"({left.to_sql(c)} {op} {right.to_sql(c)})")

    def __add__(self, o: Any) -> "Expression":
        return self._infix("+", o)

    def __radd__(self, o: Any) -> "Expression":
        return self._infix("+", o, True)

    def __sub__(self, o: Any) -> "Expression":
        return self._infix("-", o)

    def __rsub__(self, o: Any) -> "Expression":
        return self._infix("-", o, True)

    def __mul__(self, o: Any) -> "Expression":
        return self._infix("*", o)

    def __rmul__(self, o: Any) -> "Expression":
        return self._infix("*", o, True)

    def __truediv__(self, o: Any) -> "Expression":
        return self._infix("/", o)

    def __rtruediv__(self, o: Any) -> "Expression":
        return self._infix("/", o, True)

    def __mod__(self, o: Any) -> "Expression":
        return _call("MOD", self, o)

    def __rmod__(self, o: Any) -> "Expression":
        return _call("MOD", o, self)

    def __pow__(self, o: Any) -> "Expression":
        return _call("POWER", self, o)

    def __rpow__(self, o: Any) -> "Expression":
        return _call("POWER", o, self)

    def __neg__(self) -> "Expression":
        return Expression(lambda c: f"(- {self.to_sql(c)})")

    def __pos__(self) -> "Expression":
        return self

    def __abs__(self) -> "Expression":
        return _call("ABS", self)

    def __and__(self, o: Any) -> "Expression":
        return self._infix("AND", o)

    def __rand__(self, o: Any) -> "Expression":
        return self._infix("AND", o, True)

    def __or__(self, o: Any) -> "Expression":
        return self._infix("OR", o)

    def __ror__(self, o: Any) -> "Expression":
        return self._infix("OR", o, True)

    def __invert__(self) -> "Expression":
        return Expression(lambda c: f"(NOT {self.to_sql(c)})")

    def __eq__(self, o: Any) -> "Expression":  # type: ignore[override]
        return self._infix("=", o)

    def __ne__(self, o: Any) -> "Expression":  # type: ignore[override]
        return self._infix("<>", o)

    def __lt__(self, o: Any) -> "Expression":
        return self._infix("<", o)

    def __le__(self, o: Any) -> "Expression":
        return self._infix("<=", o)

    def __gt__(self, o: Any) -> "Expression":
        return self._infix(">", o)

    def __ge__(self, o: Any) -> "Expression":
        return self._infix(">=", o)

    # -- naming and ordering -------------------------------------------------------------------
    def alias(self, name: str, *extra_names: str) -> "Expression":
        """This expression named ``name`` (``AS `name```)."""
        if extra_names:  # the columns of a Python function's result (map, flat_map...)
            e = Expression(self._render, kind="aliases", aggregate=self.aggregate)
            e.udf, e.aliased, e.aliases = self.udf, self, [name, *extra_names]
            return e
        e = Expression(lambda c: f"{self.to_sql(c)} AS {quote_identifier(name)}", name,
                       kind="alias")
        e.udf, e.aliased, e.aliases = self.udf, self, [name]
        #: the column renamed, when this aliases a plain column (for ``rename_columns``)
        e.alias_of = self.name if self.kind == "column" else None
        return e

    @property
    def asc(self) -> "Expression":
        return Expression(lambda c: f"{self.to_sql(c)} ASC", self.name, kind="asc")

    @property
    def desc(self) -> "Expression":
        return Expression(lambda c: f"{self.to_sql(c)} DESC", self.name, kind="desc")

    @property
    def nulls_first(self) -> "Expression":
        return Expression(lambda c: f"{self.to_sql(c)} NULLS FIRST", self.name, kind=self.kind)

    @property
    def nulls_last(self) -> "Expression":
        return Expression(lambda c: f"{self.to_sql(c)} NULLS LAST", self.name, kind=self.kind)

    # -- conditions ----------------------------------------------------------------------------
    def _postfix(self, text: str) -> "Expression":
        return Expression(lambda c: f"({self.to_sql(c)} {text})")

    @property
    def is_null(self) -> "Expression":
        return self._postfix("IS NULL")

    @property
    def is_not_null(self) -> "Expression":
        return self._postfix("IS NOT NULL")

    @property
    def is_true(self) -> "Expression":
        return self._postfix("IS TRUE")

    @property
    def is_false(self) -> "Expression":
        return self._postfix("IS FALSE")

    @property
    def is_not_true(self) -> "Expression":
        return self._postfix("IS NOT TRUE")

    @property
    def is_not_false(self) -> "Expression":
        return self._postfix("IS NOT FALSE")

    def in_(self, first_element_or_table: Any, *remaining_elements: Any) -> "Expression":
        """``a IN (x, y, ...)``, or ``a IN (<subquery>)`` of a Table."""
        sql = getattr(first_element_or_table, "query_sql", None)
        if sql is not None and not remaining_elements:
            return Expression(lambda c: f"({self.to_sql(c)} IN ({sql}))")
        items = [to_expr(e) for e in (first_element_or_table, *remaining_elements)]
        return Expression(
            lambda c: f"({self.to_sql(c)} IN ({', '.join(i.to_sql(c) for i in items)}))")

    def between(self, lower_bound: Any, upper_bound: Any) -> "Expression":
        lo, hi = to_expr(lower_bound), to_expr(upper_bound)
        return Expression(lambda c: f"({self.to_sql(c)} BETWEEN {lo.to_sql(c)} AND {hi.to_sql(c)})")

    def not_between(self, lower_bound: Any, upper_bound: Any) -> "Expression":
        lo, hi = to_expr(lower_bound), to_expr(upper_bound)
        return Expression(
            lambda c: f"({self.to_sql(c)} NOT BETWEEN {lo.to_sql(c)} AND {hi.to_sql(c)})")

    def then(self, if_true: Any, if_false: Any) -> "Expression":
        """``CASE WHEN self THEN if_true ELSE if_false END``."""
        return if_then_else(self, if_true, if_false)

    def if_null(self, null_replacement: Any) -> "Expression":
        return _call("IFNULL", self, null_replacement)

    def like(self, pattern: Any) -> "Expression":
        return self._infix("LIKE", pattern)

    def similar(self, pattern: Any) -> "Expression":
        return self._infix("SIMILAR TO", pattern)

    # -- types -----------------------------------------------------------------------------------
    def cast(self, data_type: DataType) -> "Expression":
        """``CAST(self AS <type>)``."""
        e = Expression(lambda c: f"CAST({self.to_sql(c)} AS {data_type})")
        inner = self.name if self.kind == "column" else self.derived_name
        e.derived_name = f"{inner}-{data_type}" if inner else None
        return e

    def try_cast(self, data_type: DataType) -> "Expression":
        return Expression(lambda c: f"TRY_CAST({self.to_sql(c)} AS {data_type})")

    # -- JSON ------------------------------------------------------------------------------------
    def is_json(self, json_type: JsonType | None = None) -> "Expression":
        """``self IS JSON [VALUE|SCALAR|ARRAY|OBJECT]``."""
        return Expression(lambda c: is_json_sql(self.to_sql(c), json_type))

    def json_exists(self, path: str, on_error: JsonExistsOnError | None = None) -> "Expression":
        """``JSON_EXISTS(self, path [... ON ERROR])``."""
        return Expression(lambda c: json_exists_sql(self.to_sql(c), path, on_error))

    def json_value(self, path: str, returning_type: DataType = _STRING,
                   on_empty: JsonValueOnEmptyOrError = JsonValueOnEmptyOrError.NULL,
                   default_on_empty: Any = None,
                   on_error: JsonValueOnEmptyOrError = JsonValueOnEmptyOrError.NULL,
                   default_on_error: Any = None) -> "Expression":
        """``JSON_VALUE(self, path RETURNING <type> ... ON EMPTY ... ON ERROR)``."""
        empty, error = to_expr(default_on_empty), to_expr(default_on_error)
        return Expression(lambda c: json_value_sql(
            self.to_sql(c), path, returning_type, value_behaviour(on_empty, empty.to_sql(c)),
            value_behaviour(on_error, error.to_sql(c))))

    def json_query(self, path: str,
                   wrapping_behavior: JsonQueryWrapper = JsonQueryWrapper.WITHOUT_ARRAY,
                   on_empty: JsonQueryOnEmptyOrError = JsonQueryOnEmptyOrError.NULL,
                   on_error: JsonQueryOnEmptyOrError = JsonQueryOnEmptyOrError.NULL
                   ) -> "Expression":
        """``JSON_QUERY(self, path <wrapper> ... ON EMPTY ... ON ERROR)``."""
        return Expression(lambda c: json_query_sql(self.to_sql(c), path, wrapping_behavior,
                                                   on_empty, on_error))

    # -- aggregates ------------------------------------------------------------------------------
    def _agg(self, fn: str, *extra: Any) -> "Expression":
        args = (self, *(to_expr(e) for e in extra))
        return Expression(lambda c: c.note(f"{fn}({', '.join(a.to_sql(c) for a in args)})"),
                          aggregate=(fn, args))

    sum = property(lambda self: self._agg("SUM"))
    sum0 = property(lambda self: _sum0(self))
    min = property(lambda self: self._agg("MIN"))
    max = property(lambda self: self._agg("MAX"))
    count = property(lambda self: self._agg("COUNT"))
    avg = property(lambda self: self._agg("AVG"))
    first_value = property(lambda self: self._agg("FIRST_VALUE"))
    last_value = property(lambda self: self._agg("LAST_VALUE"))
    stddev_pop = property(lambda self: self._agg("STDDEV_POP"))
    stddev_samp = property(lambda self: self._agg("STDDEV_SAMP"))
    var_pop = property(lambda self: self._agg("VAR_POP"))
    var_samp = property(lambda self: self._agg("VAR_SAMP"))
    collect = property(lambda self: self._agg("COLLECT"))

    def list_agg(self, separator: Any = None) -> "Expression":
        return self._agg("LISTAGG") if separator is None else self._agg("LISTAGG", separator)

    @property
    def distinct(self) -> "Expression":
        """The aggregate over distinct values (``col('a').count.distinct``)."""
        if self.aggregate is None:
            raise ValueError(f"distinct applies to an aggregate call, not to {self.to_sql()}")
        fn, args = self.aggregate
        return Expression(
            lambda c: c.note(f"{fn}(DISTINCT {', '.join(a.to_sql(c) for a in args)})"),
            aggregate=(fn + " DISTINCT", args))

    def over(self, alias: Any) -> "Expression":
        """This aggregate over the over window named ``alias`` (``.over(col('w'))``)."""
        name = alias.name if isinstance(alias, Expression) else str(alias)

        def render(c: RenderContext) -> str:
            if name not in c.over_windows:
                raise ValueError(f"over window {name!r} is not defined: give it to over_window()")
            return f"{self.to_sql(c)} OVER ({c.over_windows[name]})"
        return Expression(render)

    # -- window properties -----------------------------------------------------------------------
    def _window_property(self, column: str, prop: str) -> "Expression":
        def render(c: RenderContext) -> str:
            if c.window_alias is not None and c.window_alias == self.name:
                return c.note(column)
            raise ValueError(f"{self.name}.{prop} is a property of a group window named "
                             f"{self.name!r}: use it in the select() of window(...).group_by(...)")
        return Expression(render, kind="window_property")

    start = property(lambda self: self._window_property("window_start", "start"))
    end = property(lambda self: self._window_property("window_end", "end"))
    rowtime = property(lambda self: self._window_property("window_time", "rowtime"))

    @property
    def proctime(self) -> "Expression":
        return self._window_property("window_time", "proctime")

    # -- interval literals -----------------------------------------------------------------------
    def _interval(self, unit: str, factor: int = 1) -> "Expression":
        amount = self.literal_value()
        if unit == "MILLISECOND":
            text = f"INTERVAL '{decimal.Decimal(amount) / 1000:.3f}' SECOND"
            return Expression(lambda c: text, interval=(amount, unit))
        if factor != 1:
            amount = amount * factor
        return Expression(lambda c: f"INTERVAL '{amount}' {unit}", interval=(amount, unit))

    def literal_value(self) -> Any:
        """The Python value of a literal (``lit(10)`` -> 10)."""
        if self.kind != "literal":
            raise ValueError(f"an interval needs a literal amount (lit(10).seconds), not "
                             f"{self.to_sql()}")
        return self.value

    year = years = property(lambda self: self._interval("YEAR"))
    quarter = quarters = property(lambda self: self._interval("MONTH", 3))
    month = months = property(lambda self: self._interval("MONTH"))
    week = weeks = property(lambda self: self._interval("DAY", 7))
    day = days = property(lambda self: self._interval("DAY"))
    hour = hours = property(lambda self: self._interval("HOUR"))
    minute = minutes = property(lambda self: self._interval("MINUTE"))
    second = seconds = property(lambda self: self._interval("SECOND"))
    milli = millis = property(lambda self: self._interval("MILLISECOND"))

    @property
    def rows(self) -> "Expression":
        """A row-count interval of an over window (``lit(2).rows``)."""
        amount = self.literal_value()
        return Expression(lambda c: f"{amount}", interval=(amount, "ROWS"))

    # -- scalar functions ------------------------------------------------------------------------
    def substring(self, begin_index: Any, length: Any = None) -> "Expression":
        return _call("SUBSTRING", self, begin_index, *([] if length is None else [length]))

    substr = substring

    def trim(self, character: Any = None) -> "Expression":
        return self._trim("BOTH", character)

    def trim_leading(self, character: Any = None) -> "Expression":
        return self._trim("LEADING", character)

    def trim_trailing(self, character: Any = None) -> "Expression":
        return self._trim("TRAILING", character)

    def _trim(self, side: str, character: Any) -> "Expression":
        ch = to_expr(" " if character is None else character)
        return Expression(lambda c: f"TRIM({side} {ch.to_sql(c)} FROM {self.to_sql(c)})")

    def replace(self, search: Any, replacement: Any) -> "Expression":
        return _call("REPLACE", self, search, replacement)

    char_length = property(lambda self: _call("CHAR_LENGTH", self))
    upper_case = property(lambda self: _call("UPPER", self))
    lower_case = property(lambda self: _call("LOWER", self))
    init_cap = property(lambda self: _call("INITCAP", self))
    to_base64 = property(lambda self: _call("TO_BASE64", self))
    from_base64 = property(lambda self: _call("FROM_BASE64", self))
    md5 = property(lambda self: _call("MD5", self))
    sha1 = property(lambda self: _call("SHA1", self))
    sha256 = property(lambda self: _call("SHA256", self))
    sha512 = property(lambda self: _call("SHA512", self))
    sqrt = property(lambda self: _call("SQRT", self))
    exp = property(lambda self: _call("EXP", self))
    ln = property(lambda self: _call("LN", self))
    log10 = property(lambda self: _call("LOG10", self))
    log2 = property(lambda self: _call("LOG2", self))
    sign = property(lambda self: _call("SIGN", self))
    cardinality = property(lambda self: _call("CARDINALITY", self))
    element = property(lambda self: _call("ELEMENT", self))
    to_date = property(lambda self: self.cast(DataTypes.DATE()))
    to_time = property(lambda self: self.cast(DataTypes.TIME()))
    to_timestamp = property(lambda self: self.cast(DataTypes.TIMESTAMP(3)))

    @property
    def abs(self) -> "Expression":
        return _call("ABS", self)

    @property
    def floor(self) -> "Expression":
        return _call("FLOOR", self)

    @property
    def ceil(self) -> "Expression":
        return _call("CEIL", self)

    def round(self, places: Any = 0) -> "Expression":
        return _call("ROUND", self, places)

    def truncate(self, n: Any = 0) -> "Expression":
        return _call("TRUNCATE", self, n)

    def power(self, other: Any) -> "Expression":
        return _call("POWER", self, other)

    def log(self, base: Any = None) -> "Expression":
        return _call("LN", self) if base is None else _call("LOG", base, self)

    def position(self, haystack: Any) -> "Expression":
        h = to_expr(haystack)
        return Expression(lambda c: f"POSITION({self.to_sql(c)} IN {h.to_sql(c)})")

    def lpad(self, length: Any, pad: Any) -> "Expression":
        return _call("LPAD", self, length, pad)

    def rpad(self, length: Any, pad: Any) -> "Expression":
        return _call("RPAD", self, length, pad)

    def repeat(self, n: Any) -> "Expression":
        return _call("REPEAT", self, n)

    def regexp_replace(self, regex: Any, replacement: Any) -> "Expression":
        return _call("REGEXP_REPLACE", self, regex, replacement)

    def regexp_extract(self, regex: Any, extract_index: Any = None) -> "Expression":
        return _call("REGEXP_EXTRACT", self, regex, *([] if extract_index is None else
                                                      [extract_index]))

    def ltrim(self) -> "Expression":
        return _call("LTRIM", self)

    def rtrim(self) -> "Expression":
        return _call("RTRIM", self)

    def extract(self, time_interval_unit: TimeIntervalUnit) -> "Expression":
        return Expression(lambda c: f"EXTRACT({time_interval_unit.name} FROM {self.to_sql(c)})")

    def get(self, name_or_index: Any) -> "Expression":
        """A field of a ROW (by name) or an element of an ARRAY (by 1-based index)."""
        if isinstance(name_or_index, str):
            return Expression(lambda c: f"{self.to_sql(c)}.{quote_identifier(name_or_index)}")
        return self.at(name_or_index)

    def at(self, index: Any) -> "Expression":
        i = to_expr(index)
        return Expression(lambda c: f"{self.to_sql(c)}[{i.to_sql(c)}]")


def _sum0(e: Expression) -> Expression:
    return Expression(lambda c: c.note(f"COALESCE(SUM({e.to_sql(c)}), 0)"),
                      aggregate=("SUM0", (e,)))


def _call(fn: str, *args: Any) -> Expression:
    exprs = [to_expr(a) for a in args]
    return Expression(lambda c: f"{fn}({', '.join(a.to_sql(c) for a in exprs)})")


def to_expr(value: Any) -> Expression:
    """``value`` as an Expression: itself, else a literal."""
    return value if isinstance(value, Expression) else lit(value)


def literal_sql(value: Any) -> str:
    """A Python value as a Flink SQL literal (PyFlink's ``lit`` types: int -> INT, float ->
    DOUBLE, str -> STRING, ...)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return f"CAST({quote_string(repr(value).replace('inf', 'Infinity'))} AS DOUBLE)"
        return f"{value!r}E0" if "e" not in repr(value) else repr(value).upper()
    if isinstance(value, decimal.Decimal):
        return f"{value:f}"
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, datetime.time):
        return f"TIME '{value.isoformat()}'"
    if isinstance(value, (list, tuple)):
        return f"ARRAY[{', '.join(literal_sql(v) for v in value)}]"
    if isinstance(value, dict):
        items = ", ".join(f"{literal_sql(k)}, {literal_sql(v)}" for k, v in value.items())
        return f"MAP[{items}]"
    raise TypeError(f"lit() cannot make a Flink SQL literal of {type(value).__name__} {value!r}")


# -- pyflink.table.expressions -----------------------------------------------------------------
def col(name: str) -> Expression:
    """The column ``name`` (``*`` for all columns)."""
    if name == "*":
        return Expression(lambda c: "*", "*")
    return Expression(lambda c: quote_identifier(name), name, kind="column")


def lit(v: Any, data_type: DataType | None = None) -> Expression:
    """A literal value, of ``data_type`` when given (``CAST(v AS type)``)."""
    text = literal_sql(v)
    if data_type is not None:
        text = f"CAST({text} AS {data_type})"
    expr = Expression(lambda c: text, kind="literal")
    expr.value = v
    return expr


def call(f: Any, *args: Any) -> Expression:
    """A call of the function named ``f`` (a system or catalog function) on ``args``."""
    if not isinstance(f, str):
        if callable(f) and hasattr(f, "sql_name"):  # a udf/udtf/udaf wrapper
            return f(*args)
        raise TypeError(f"call() takes a function name or a Python function made by udf(), "
                        f"udtf() or udaf(), not {f!r}")
    return _call(f, *args)


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
    cond, yes, no = to_expr(condition), to_expr(if_true), to_expr(if_false)
    return Expression(lambda c: f"CASE WHEN {cond.to_sql(c)} THEN {yes.to_sql(c)} "
                                f"ELSE {no.to_sql(c)} END")


def coalesce(*args: Any) -> Expression:
    return _call("COALESCE", *args)


def concat(first: Any, *others: Any) -> Expression:
    return _call("CONCAT", first, *others)


def concat_ws(separator: Any, first: Any, *others: Any) -> Expression:
    return _call("CONCAT_WS", separator, first, *others)


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


def current_watermark(rowtimeAttribute: Any) -> Expression:  # noqa: N803 - PyFlink's name
    return _call("CURRENT_WATERMARK", rowtimeAttribute)


def to_date(date_str: Any, format: Any = None) -> Expression:
    return _call("TO_DATE", date_str, *([] if format is None else [format]))


def to_timestamp(timestamp_str: Any, format: Any = None) -> Expression:
    return _call("TO_TIMESTAMP", timestamp_str, *([] if format is None else [format]))


def to_timestamp_ltz(numeric_epoch_time: Any, precision: Any) -> Expression:
    return _call("TO_TIMESTAMP_LTZ", numeric_epoch_time, precision)


def date_format(timestamp: Any, format: Any) -> Expression:
    return _call("DATE_FORMAT", timestamp, format)


def timestamp_diff(time_point_unit: TimePointUnit, time_point1: Any, time_point2: Any
                   ) -> Expression:
    a, b = to_expr(time_point1), to_expr(time_point2)
    return Expression(lambda c: f"TIMESTAMPDIFF({time_point_unit.name}, {a.to_sql(c)}, "
                                f"{b.to_sql(c)})")


def convert_tz(date_str: Any, tz_from: Any, tz_to: Any) -> Expression:
    return _call("CONVERT_TZ", date_str, tz_from, tz_to)


def from_unixtime(unixtime: Any, format: Any = None) -> Expression:
    return _call("FROM_UNIXTIME", unixtime, *([] if format is None else [format]))


def unix_timestamp(date_str: Any = None, format: Any = None) -> Expression:
    args = [a for a in (date_str, format) if a is not None]
    return _call("UNIX_TIMESTAMP", *args)


def json_string(value: Any) -> Expression:
    """``JSON_STRING(value)``: the value serialized as JSON."""
    return _call("JSON_STRING", value)


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


def array(head: Any, *tail: Any) -> Expression:
    items = [to_expr(x) for x in (head, *tail)]
    return Expression(lambda c: f"ARRAY[{', '.join(i.to_sql(c) for i in items)}]")


def row(head: Any, *tail: Any) -> Expression:
    return _call("ROW", head, *tail)


def map_(key: Any, value: Any, *tail: Any) -> Expression:
    items = [to_expr(x) for x in (key, value, *tail)]
    return Expression(lambda c: f"MAP[{', '.join(i.to_sql(c) for i in items)}]")


def rand(seed: Any = None) -> Expression:
    return _call("RAND", *([] if seed is None else [seed]))


def rand_integer(bound: Any, seed: Any = None) -> Expression:
    return _call("RAND_INTEGER", *([] if seed is None else [seed]), bound)


def atan2(y: Any, x: Any) -> Expression:
    return _call("ATAN2", y, x)


def negative(v: Any) -> Expression:
    return -to_expr(v)


def log(v: Any, base: Any = None) -> Expression:
    return to_expr(v).log(base)


def null_of(data_type: DataType) -> Expression:
    return Expression(lambda c: f"CAST(NULL AS {data_type})")


def row_interval(rows: int) -> Expression:
    return lit(rows).rows


def with_columns(head: Any, *tails: Any) -> Expression:
    raise NotImplementedError("with_columns() (column ranges) needs the schema: not supported yet")


def without_columns(head: Any, *tails: Any) -> Expression:
    raise NotImplementedError("without_columns() (column ranges) needs the schema: not supported "
                              "yet; use Table.drop_columns")


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
