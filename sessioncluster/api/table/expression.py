"""PyFlink's ``Expression`` (``pyflink.table.expression``): a column, a literal or a call,
with its operators and methods, rendered to Flink SQL text.

The client never parses SQL: an :class:`Expression` is a small tree that renders itself as Flink
SQL (``col('a') + 1`` -> ``(`a` + 1)``). Window properties (``col('w').start``) and over windows
(``.over(col('w'))``) render against a :class:`RenderContext` given by the Table operation.
"""

from __future__ import annotations

import decimal
from typing import Any

from .jsonexpressions import (
    JsonExistsOnError,
    JsonQueryOnEmptyOrError,
    JsonQueryWrapper,
    JsonType,
    JsonValueOnEmptyOrError,
    is_json_sql,
    json_exists_sql,
    json_query_sql,
    json_value_sql,
    value_behaviour,
)
from .sqltext import RenderContext, Renderer, literal_sql, quote_identifier
from .types import DataType, DataTypes
from .units import TimeIntervalUnit

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
        return call_of("MOD", self, o)

    def __rmod__(self, o: Any) -> "Expression":
        return call_of("MOD", o, self)

    def __pow__(self, o: Any) -> "Expression":
        return call_of("POWER", self, o)

    def __rpow__(self, o: Any) -> "Expression":
        return call_of("POWER", o, self)

    def __neg__(self) -> "Expression":
        return Expression(lambda c: f"(- {self.to_sql(c)})")

    def __pos__(self) -> "Expression":
        return self

    def __abs__(self) -> "Expression":
        return call_of("ABS", self)

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
        yes, no = to_expr(if_true), to_expr(if_false)
        return Expression(lambda c: f"CASE WHEN {self.to_sql(c)} THEN {yes.to_sql(c)} "
                                    f"ELSE {no.to_sql(c)} END")

    def if_null(self, null_replacement: Any) -> "Expression":
        return call_of("IFNULL", self, null_replacement)

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
        return call_of("SUBSTRING", self, begin_index, *([] if length is None else [length]))

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
        return call_of("REPLACE", self, search, replacement)

    char_length = property(lambda self: call_of("CHAR_LENGTH", self))
    upper_case = property(lambda self: call_of("UPPER", self))
    lower_case = property(lambda self: call_of("LOWER", self))
    init_cap = property(lambda self: call_of("INITCAP", self))
    to_base64 = property(lambda self: call_of("TO_BASE64", self))
    from_base64 = property(lambda self: call_of("FROM_BASE64", self))
    md5 = property(lambda self: call_of("MD5", self))
    sha1 = property(lambda self: call_of("SHA1", self))
    sha256 = property(lambda self: call_of("SHA256", self))
    sha512 = property(lambda self: call_of("SHA512", self))
    sqrt = property(lambda self: call_of("SQRT", self))
    exp = property(lambda self: call_of("EXP", self))
    ln = property(lambda self: call_of("LN", self))
    log10 = property(lambda self: call_of("LOG10", self))
    log2 = property(lambda self: call_of("LOG2", self))
    sign = property(lambda self: call_of("SIGN", self))
    cardinality = property(lambda self: call_of("CARDINALITY", self))
    element = property(lambda self: call_of("ELEMENT", self))
    to_date = property(lambda self: self.cast(DataTypes.DATE()))
    to_time = property(lambda self: self.cast(DataTypes.TIME()))
    to_timestamp = property(lambda self: self.cast(DataTypes.TIMESTAMP(3)))

    @property
    def abs(self) -> "Expression":
        return call_of("ABS", self)

    @property
    def floor(self) -> "Expression":
        return call_of("FLOOR", self)

    @property
    def ceil(self) -> "Expression":
        return call_of("CEIL", self)

    def round(self, places: Any = 0) -> "Expression":
        return call_of("ROUND", self, places)

    def truncate(self, n: Any = 0) -> "Expression":
        return call_of("TRUNCATE", self, n)

    def power(self, other: Any) -> "Expression":
        return call_of("POWER", self, other)

    def log(self, base: Any = None) -> "Expression":
        return call_of("LN", self) if base is None else call_of("LOG", base, self)

    def position(self, haystack: Any) -> "Expression":
        h = to_expr(haystack)
        return Expression(lambda c: f"POSITION({self.to_sql(c)} IN {h.to_sql(c)})")

    def lpad(self, length: Any, pad: Any) -> "Expression":
        return call_of("LPAD", self, length, pad)

    def rpad(self, length: Any, pad: Any) -> "Expression":
        return call_of("RPAD", self, length, pad)

    def repeat(self, n: Any) -> "Expression":
        return call_of("REPEAT", self, n)

    def regexp_replace(self, regex: Any, replacement: Any) -> "Expression":
        return call_of("REGEXP_REPLACE", self, regex, replacement)

    def regexp_extract(self, regex: Any, extract_index: Any = None) -> "Expression":
        return call_of("REGEXP_EXTRACT", self, regex, *([] if extract_index is None else
                                                      [extract_index]))

    def ltrim(self) -> "Expression":
        return call_of("LTRIM", self)

    def rtrim(self) -> "Expression":
        return call_of("RTRIM", self)

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


def call_of(fn: str, *args: Any) -> Expression:
    """``fn(args...)``, each argument an Expression or a literal."""
    exprs = [to_expr(a) for a in args]
    return Expression(lambda c: f"{fn}({', '.join(a.to_sql(c) for a in exprs)})")


def to_expr(value: Any) -> Expression:
    """``value`` as an Expression: itself, else a literal."""
    return value if isinstance(value, Expression) else lit(value)



def lit(v: Any, data_type: DataType | None = None) -> Expression:
    """A literal value, of ``data_type`` when given (``CAST(v AS type)``)."""
    text = literal_sql(v)
    if data_type is not None:
        text = f"CAST({text} AS {data_type})"
    expr = Expression(lambda c: text, kind="literal")
    expr.value = v
    return expr

