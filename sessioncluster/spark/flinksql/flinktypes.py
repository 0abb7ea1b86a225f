"""Flink's logical type of a Flink SQL expression (sqlglot), as Flink's planner derives it.

A pure module (no Spark): given the Flink types of the columns an expression reads, the type of
the expression, with its nullability, CHAR/VARCHAR lengths, DECIMAL precision and scale and
TIMESTAMP precision, by Flink's rules (Calcite's ``ReturnTypes``/``SqlTypeUtil``, Flink's
``LogicalTypeMerging`` for DECIMAL and the aggregates, ``FlinkTypeSystem``: CHARs of different
lengths unify to VARCHAR). None means "not known here": the caller falls back to Spark's type
and never claims a wrong one.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from sqlglot import exp

from ...api.table.typeparser import parse_type
from ...api.table.types import (
    ArrayType,
    CharType,
    DataType,
    DataTypes,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    NumericType,
    TimestampType,
    TimeType,
    VarCharType,
)
from .builtins import DAY_UNITS, SUB_DAY_UNITS, FlinkCollect
from .dialect import FlinkCast
from .typemerging import (
    INT_RANK,
    MAX_DECIMAL,
    MIN_ADJUSTED_SCALE,
    approximate,
    decimal_result,
    least_restrictive,
)

#: a table's columns in order: (name, Flink type or None when not known)
Columns = list[tuple[str, DataType | None]]
#: a table's columns by name (its name alone, and ``qualifier.name``), lower case
Scope = Mapping[str, DataType | None]



@dataclass
class Context:
    """What typing an expression needs beyond itself: the columns in scope, whether the
    SELECT it is in groups (an aggregate over no GROUP BY is nullable: the input may be empty)."""

    scope: Scope = field(default_factory=dict)
    grouped: bool = False


def type_text(t: DataType) -> str:
    """The type as Flink's ``TYPEOF`` and ``DataType.toString`` write it (``INT NOT NULL``)."""
    return str(t)


def infer(node: exp.Expr, context: Context | None = None) -> DataType | None:
    """Flink's type of ``node``; None when it is not known here."""
    context = context or Context()
    handler = _HANDLERS.get(type(node))
    if handler is not None:
        return handler(node, context)
    if isinstance(node, exp.Anonymous):
        return _call(node.name.upper(), node.expressions, context)
    return None


def types_of(nodes: Iterable[exp.Expr], context: Context) -> list[DataType] | None:
    """The types of all ``nodes``, or None if one is not known."""
    out = []
    for n in nodes:
        t = infer(n, context)
        if t is None:
            return None
        out.append(t)
    return out


def _nullable_if_any(t: DataType, inputs: Sequence[DataType]) -> DataType:
    return t.nullable() if any(i.is_nullable for i in inputs) else t.not_null()


# -- literals --------------------------------------------------------------------------------

def _number(node: exp.Expr) -> str | None:
    """A numeric literal's text, a unary minus and parentheses around it folded in (Calcite's
    parser makes ``-(-2147483648)`` one literal, 2147483648)."""
    if isinstance(node, exp.Literal) and not node.is_string:
        return str(node.this)
    if isinstance(node, exp.Paren):
        return _number(node.this)
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        if inner is None:
            return None
        return inner[1:] if inner.startswith("-") else "-" + inner
    return None


def _numeric_literal(text: str) -> DataType | None:
    if "e" in text.lower():
        return DataTypes.DOUBLE(False)
    value = decimal.Decimal(text)
    if "." not in text:
        if -2**31 <= value < 2**31:
            return DataTypes.INT(False)
        if -2**63 <= value < 2**63:
            return DataTypes.BIGINT(False)
    _, digits, exponent = value.as_tuple()
    scale = max(0, -int(exponent))
    precision = max(len(digits), scale, 1)
    if precision > MAX_DECIMAL:
        return None
    return DataTypes.DECIMAL(precision, scale, False)


def _literal(node: exp.Expr, _: Context) -> DataType | None:
    assert isinstance(node, exp.Literal)
    if node.is_string:
        return DataTypes.CHAR(len(node.this), False) if node.this else None
    return _numeric_literal(str(node.this))


def _neg(node: exp.Expr, context: Context) -> DataType | None:
    number = _number(node)
    if number is not None:
        return _numeric_literal(number)
    t = infer(node.this, context)
    return t if isinstance(t, NumericType) else None


def _typed_literal(node: exp.Expr, context: Context) -> DataType | None:
    """``DATE '...'``, ``TIME '...'``, ``TIMESTAMP '...'`` (precision: the digits written)."""
    assert isinstance(node, exp.Cast)
    if not (isinstance(node.this, exp.Literal) and node.this.is_string):
        return None
    digits = len(node.this.name.partition(".")[2].strip())
    T = exp.DataType.Type
    if node.to.is_type(T.DATE):
        return DataTypes.DATE(False)
    if node.to.is_type(T.TIME):
        return DataTypes.TIME(digits, False)
    if node.to.is_type(T.TIMESTAMP, T.TIMESTAMPTZ):
        return DataTypes.TIMESTAMP(digits, False)
    return None


def _cast(node: exp.Expr, context: Context) -> DataType | None:
    assert isinstance(node, FlinkCast)
    operand = infer(node.this, context)
    if operand is None:
        return None
    try:
        target = parse_type(node.args["to"].this)
    except (ValueError, TypeError):
        return None
    # TRY_CAST is NULL where the value does not convert
    return target.nullable() if node.args.get("safe") or operand.is_nullable else target.not_null()


def _column(node: exp.Expr, context: Context) -> DataType | None:
    assert isinstance(node, exp.Column)
    name = node.name.lower()
    if node.table:
        return context.scope.get(f"{node.table.lower()}.{name}")
    if name == "localtimestamp":
        return DataTypes.TIMESTAMP(3, False)
    if name in ("localtime", "current_time"):
        return DataTypes.TIME(0, False)
    return context.scope.get(name)


# -- arithmetic ------------------------------------------------------------------------------

def _arithmetic(node: exp.Expr, context: Context) -> DataType | None:
    kind = exp.Div if isinstance(node, exp.IntDiv) else type(node)
    types = types_of([node.this, node.expression], context)
    if types is None:
        return None
    a, b = types
    if isinstance(a, (TimestampType, DateType, LocalZonedTimestampType)) and kind in (
            exp.Add, exp.Sub) and isinstance(node.expression, exp.Interval):
        return a.nullable() if a.is_nullable else a
    if not (isinstance(a, NumericType) and isinstance(b, NumericType)):
        return None
    result: DataType | None
    if isinstance(a, (FloatType, DoubleType)) or isinstance(b, (FloatType, DoubleType)):
        result = approximate(a, b)
    elif isinstance(a, DecimalType) or isinstance(b, DecimalType):
        result = DataTypes.DECIMAL(*decimal_result(kind, a, b))
    elif kind is exp.Mod:
        result = b  # Calcite's MOD is its divisor's type
    else:
        result = a if INT_RANK[type(a)] >= INT_RANK[type(b)] else b
    return None if result is None else _nullable_if_any(result, types)


def _same_number(node: exp.Expr, context: Context) -> DataType | None:
    """ABS and the like: their operand's numeric type."""
    t = infer(node.this, context)
    return t if isinstance(t, NumericType) else None


# -- predicates ------------------------------------------------------------------------------

def _predicate(node: exp.Expr, context: Context) -> DataType | None:
    operands = [node.this, *(node.args.get(k) for k in ("expression", "low", "high"))]
    operands += node.args.get("expressions") or []
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        return None
    types = types_of([o for o in operands if o is not None], context)
    return None if types is None else _nullable_if_any(DataTypes.BOOLEAN(), types)


def _not_null_boolean(node: exp.Expr, context: Context) -> DataType | None:
    return DataTypes.BOOLEAN(False)


def _boolean_literal(node: exp.Expr, context: Context) -> DataType | None:
    return DataTypes.BOOLEAN(False)


# -- strings ---------------------------------------------------------------------------------

def _dpipe(node: exp.Expr, context: Context) -> DataType | None:
    types = types_of([node.this, node.expression], context)
    if types is None or not all(isinstance(t, CharType) for t in types):
        return None
    length = min(sum(t.length for t in types), VarCharType.MAX)  # type: ignore[attr-defined]
    fixed = all(type(t) is CharType for t in types)
    result = DataTypes.CHAR(length) if fixed else DataTypes.VARCHAR(length)
    return _nullable_if_any(result, types)


def _string_function(varying: bool, nullable: bool = False
                     ) -> Callable[[exp.Expr, Context], DataType | None]:
    """UPPER, LOWER, INITCAP (their operand's type); TRIM, SUBSTRING (as VARCHAR); nullable if
    an operand is (SUBSTRING always: Flink's own function)."""
    def handler(node: exp.Expr, context: Context) -> DataType | None:
        operands = [v for k, v in node.args.items() if isinstance(v, exp.Expr)
                    and k in ("this", "expression", "start", "length")]
        types = types_of(operands, context)
        if types is None or not isinstance(types[0], CharType):
            return None
        first = types[0]
        result = DataTypes.VARCHAR(first.length) if varying else first
        return result.nullable() if nullable else _nullable_if_any(result, types)

    return handler


def _concat(node: exp.Expr, context: Context) -> DataType | None:
    types = types_of(node.expressions, context)
    return None if types is None else _nullable_if_any(DataTypes.STRING(), types)


# -- choices ---------------------------------------------------------------------------------

def _choice(values: Sequence[exp.Expr], context: Context,
            nullable: bool = False) -> DataType | None:
    types = types_of(values, context)
    result = None if types is None else least_restrictive(types)
    if result is None:
        return None
    return result.nullable() if nullable else result


def _case(node: exp.Expr, context: Context) -> DataType | None:
    ifs = node.args.get("ifs") or []
    default = node.args.get("default")
    if default is None and any(_constant_node(i.this) for i in ifs):
        return None  # Flink folds a constant condition first (WHEN TRUE THEN 'a': CHAR(1) NOT NULL)
    branches = [i.args["true"] for i in ifs]
    return _choice(branches + ([default] if default is not None else []), context,
                   nullable=default is None)


def _if(node: exp.Expr, context: Context) -> DataType | None:
    false = node.args.get("false")
    values = [node.args["true"]] + ([false] if false is not None else [])
    return _choice(values, context, nullable=false is None)


def _coalesce(node: exp.Expr, context: Context) -> DataType | None:
    types = types_of([node.this, *node.expressions], context)
    if types is None:
        return None
    result = least_restrictive(types)
    if result is None:
        return None
    # NULL only if every operand may be
    return result if all(t.is_nullable for t in types) else result.not_null()


def _constant_node(node: exp.Expr) -> bool:
    return not any(node.find_all(exp.Column))


def _nullif(node: exp.Expr, context: Context) -> DataType | None:
    if _constant_node(node):
        return None  # Flink folds it first: NULLIF(1, 3) is INT NOT NULL
    t = infer(node.this, context)
    return None if t is None else t.nullable()


# -- aggregates ------------------------------------------------------------------------------

def _aggregate(result: Callable[[DataType], DataType | None]
               ) -> Callable[[exp.Expr, Context], DataType | None]:
    """An aggregate: ``result`` of its operand's type, nullable over no GROUP BY (no rows: NULL)
    or a nullable operand (Calcite's ``ARG0_NULLABLE_IF_EMPTY``)."""
    def handler(node: exp.Expr, context: Context) -> DataType | None:
        if node.args.get("expressions") or isinstance(node.this, exp.Distinct):
            return None
        operand = infer(node.this, context)
        if operand is None:
            return None
        t = result(operand)
        if t is None:
            return None
        return t.nullable() if operand.is_nullable or not context.grouped else t.not_null()

    return handler


def _sum_type(t: DataType) -> DataType | None:
    if isinstance(t, DecimalType):  # Flink's findSumAggType
        return DataTypes.DECIMAL(MAX_DECIMAL, t.scale)
    return t if isinstance(t, NumericType) else None


def _avg_type(t: DataType) -> DataType | None:
    if isinstance(t, DecimalType):  # Flink's findAvgAggType: DECIMAL(38, max(6, s))
        return DataTypes.DECIMAL(MAX_DECIMAL, max(MIN_ADJUSTED_SCALE, t.scale))
    return t if isinstance(t, NumericType) else None


def _count(node: exp.Expr, context: Context) -> DataType | None:
    return DataTypes.BIGINT(False)


def _collect(node: exp.Expr, context: Context) -> DataType | None:
    """``COLLECT([DISTINCT] x)``: ``MULTISET<T NOT NULL> NOT NULL`` (Flink's
    ``CollectAggFunction``: NULLs left out, the empty multiset over no rows)."""
    operand = node.this
    if isinstance(operand, exp.Distinct):
        operand = operand.expressions[0] if len(operand.expressions) == 1 else None
    t = infer(operand, context) if operand is not None else None
    return None if t is None else DataTypes.MULTISET(t.not_null(), False)


# -- constructors and calls ------------------------------------------------------------------

def _array(node: exp.Expr, context: Context) -> DataType | None:
    element = _choice(node.expressions, context) if node.expressions else None
    return None if element is None else DataTypes.ARRAY(element, False)


def _bracket(node: exp.Expr, context: Context) -> DataType | None:
    """``MAP[k, v, ...]`` (sqlglot reads it as an index into a column MAP)."""
    items = node.expressions
    if not (isinstance(node.this, exp.Column) and node.this.name.upper() == "MAP"
            and not node.this.table and items and len(items) % 2 == 0):
        return None
    keys, values = _choice(items[0::2], context), _choice(items[1::2], context)
    if keys is None or values is None:
        return None
    return DataTypes.MAP(keys, values, False)


def _row(args: Sequence[exp.Expr], context: Context) -> DataType | None:
    types = types_of(args, context)
    if types is None:
        return None
    return DataTypes.ROW([DataTypes.FIELD(f"EXPR${i}", t) for i, t in enumerate(types)], False)


def _call(name: str, args: Sequence[exp.Expr], context: Context) -> DataType | None:
    """A call sqlglot keeps as written (``dialect.RAW_FUNCTIONS``, ``ROW``)."""
    if name == "ROW":
        return _row(args, context)
    if name in ("NOW", "CURRENT_TIMESTAMP") and not args:
        return DataTypes.TIMESTAMP_LTZ(3, False)
    if name == "LOCALTIMESTAMP" and not args:
        return DataTypes.TIMESTAMP(3, False)
    if name == "TO_TIMESTAMP" and len(args) in (1, 2):
        return DataTypes.TIMESTAMP(3)  # NULL where the text does not parse
    if name in _NULLABLE_CALLS and len(args) == _NULLABLE_CALLS[name][1]:
        return _NULLABLE_CALLS[name][0]  # NULL where the text does not parse
    if name == "TYPEOF":
        return DataTypes.STRING()
    if name in _GROUP_WINDOW_BOUNDS and len(args) in (2, 3):
        return DataTypes.TIMESTAMP(3, False)  # TUMBLE_START(...) and the like
    if name == "CARDINALITY" and len(args) == 1:
        types = types_of(args, context)
        if types is None or not isinstance(types[0], (ArrayType, MapType, MultisetType)):
            return None
        return _nullable_if_any(DataTypes.INT(), types)
    if name == "TIMESTAMPADD" and len(args) == 3:
        return _timestampadd(args, context)
    if name == "CHAR_LENGTH" and len(args) == 1:
        types = types_of(args, context)
        return None if types is None else _nullable_if_any(DataTypes.INT(), types)
    return None


def _timestampadd(args: Sequence[exp.Expr], context: Context) -> DataType | None:
    """``TIMESTAMPADD(unit, n, t)``: of a DATE a DATE by DAY, WEEK, MONTH, QUARTER or YEAR and
    a TIMESTAMP(6) by SECOND, MINUTE or HOUR; of a TIMESTAMP(p) a TIMESTAMP(p) (Flink 2.3:
    /work/briefs/data/sqlsmall/probe_small.out); nullable if ``n`` or ``t`` is."""
    unit = args[0].name.upper()
    types = types_of(args[1:], context)
    if types is None or unit not in SUB_DAY_UNITS + DAY_UNITS:
        return None
    t = types[1]
    if isinstance(t, DateType):
        result = DataTypes.DATE() if unit in DAY_UNITS else DataTypes.TIMESTAMP(6)
    elif isinstance(t, TimestampType):
        result = t
    else:
        return None
    return _nullable_if_any(result, types)


#: the bounds of a GROUP BY TUMBLE/HOP/SESSION window
_GROUP_WINDOW_BOUNDS = {f"{w}_{b}" for w in ("TUMBLE", "HOP", "SESSION") for b in ("START", "END")}
#: calls whose result is nullable whatever their operands: (type, number of operands)
_NULLABLE_CALLS: dict[str, tuple[DataType, int]] = {
    "TO_DATE": (DataTypes.DATE(), 1), "DATE_FORMAT": (DataTypes.STRING(), 2)}


def _extract(node: exp.Expr, context: Context) -> DataType | None:
    """``EXTRACT(unit FROM t)``, ``YEAR(t)``, ``HOUR(t)``, ...: BIGINT."""
    operand = node.expression if isinstance(node, exp.Extract) else node.this
    if isinstance(operand, exp.TsOrDsToDate):  # how sqlglot reads YEAR(d)'s operand
        operand = operand.this
    t = infer(operand, context)
    if not isinstance(t, (DateType, TimestampType, LocalZonedTimestampType, TimeType)):
        return None
    return _nullable_if_any(DataTypes.BIGINT(), [t])


def _constant(t: DataType) -> Callable[[exp.Expr, Context], DataType | None]:
    return lambda node, context: t


def _unwrap(node: exp.Expr, context: Context) -> DataType | None:
    return infer(node.this, context)


_HANDLERS: dict[type, Callable[[exp.Expr, Context], DataType | None]] = {
    exp.Literal: _literal,
    exp.Boolean: _boolean_literal,
    exp.Null: _constant(DataTypes.NULL()),
    exp.HexString: lambda node, c: DataTypes.BINARY(max(1, len(node.this) // 2), False),
    exp.Neg: _neg,
    exp.Paren: _unwrap,
    exp.Alias: _unwrap,
    exp.Cast: _typed_literal,
    FlinkCast: _cast,
    exp.Column: _column,
    exp.Add: _arithmetic, exp.Sub: _arithmetic, exp.Mul: _arithmetic, exp.Div: _arithmetic,
    exp.IntDiv: _arithmetic, exp.Mod: _arithmetic,
    exp.Abs: _same_number,
    exp.EQ: _predicate, exp.NEQ: _predicate, exp.GT: _predicate, exp.GTE: _predicate,
    exp.LT: _predicate, exp.LTE: _predicate, exp.And: _predicate, exp.Or: _predicate,
    exp.Not: _predicate, exp.Like: _predicate, exp.Between: _predicate, exp.In: _predicate,
    exp.Is: _not_null_boolean,
    exp.DPipe: _dpipe,
    exp.Concat: _concat,
    exp.Upper: _string_function(False), exp.Lower: _string_function(False),
    exp.Initcap: _string_function(False),
    exp.Trim: _string_function(True), exp.Substring: _string_function(True, nullable=True),
    exp.Case: _case, exp.If: _if, exp.Coalesce: _coalesce, exp.Nullif: _nullif,
    exp.Count: _count, FlinkCollect: _collect,
    exp.Sum: _aggregate(_sum_type), exp.Avg: _aggregate(_avg_type),
    exp.Min: _aggregate(lambda t: t), exp.Max: _aggregate(lambda t: t),
    exp.Array: _array,
    exp.Extract: _extract, exp.Year: _extract, exp.Quarter: _extract, exp.Month: _extract,
    exp.Week: _extract, exp.DayOfYear: _extract, exp.DayOfMonth: _extract,
    exp.DayOfWeek: _extract, exp.Hour: _extract, exp.Minute: _extract, exp.Second: _extract,
    exp.Bracket: _bracket,
    exp.CurrentTimestamp: _constant(DataTypes.TIMESTAMP_LTZ(3, False)),
    exp.CurrentDate: _constant(DataTypes.DATE(False)),
    exp.CurrentTime: _constant(DataTypes.TIME(0, False)),
}
