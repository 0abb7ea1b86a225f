"""Flink's built-in scalar functions and operators where Spark's differ in name, arguments or
meaning, written as Spark SQL (checked against PyFlink 2.3's answers in
``tests/unit/test_flinksql_builtins.py``).

:func:`builtin` is called by the planner's rewrite for each node; it returns the node's Spark
form (its arguments rewritten by ``rewrite``: a new node's children are not visited again), or
None to leave the node as it is.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from sqlglot import exp

from .model import FlinkSqlError

Rewrite = Callable[[exp.Expr], exp.Expr]

#: Flink's names that the parser keeps as calls (:data:`dialect.RAW_FUNCTIONS`) and this maps
BUILTIN_CALLS = ("LOG10", "LOG2", "STR_TO_MAP", "SHA224", "SHA256", "SHA384", "SHA512",
                 "SPLIT_INDEX", "IS_ALPHA", "IS_DECIMAL", "IS_DIGIT", "ELEMENT", "RAND_INTEGER")


#: Flink 2.3's built-in functions as ``SHOW FUNCTIONS`` lists them (its module's names, sorted
#: as Java sorts strings; recorded by /work/briefs/data/ftypes3/probe.py)
FLINK_FUNCTIONS = (
    "AGG_DECIMAL_MINUS", "AGG_DECIMAL_PLUS", "ARRAY_AGG", "ARRAY_APPEND", "ARRAY_CONCAT",
    "ARRAY_CONTAINS", "ARRAY_DISTINCT", "ARRAY_EXCEPT", "ARRAY_INTERSECT", "ARRAY_JOIN",
    "ARRAY_MAX", "ARRAY_MIN", "ARRAY_POSITION", "ARRAY_PREPEND", "ARRAY_REMOVE",
    "ARRAY_REVERSE", "ARRAY_SLICE", "ARRAY_SORT", "ARRAY_UNION", "ASSIGNMENT", "BITMAP_AND",
    "BITMAP_ANDNOT", "BITMAP_AND_AGG", "BITMAP_AND_CARDINALITY_AGG", "BITMAP_BUILD",
    "BITMAP_BUILD_AGG", "BITMAP_BUILD_CARDINALITY_AGG", "BITMAP_CARDINALITY",
    "BITMAP_FROM_BYTES", "BITMAP_OR", "BITMAP_OR_AGG", "BITMAP_OR_CARDINALITY_AGG",
    "BITMAP_TO_ARRAY", "BITMAP_TO_BYTES", "BITMAP_TO_STRING", "BITMAP_XOR", "BITMAP_XOR_AGG",
    "BITMAP_XOR_CARDINALITY_AGG", "BTRIM", "COALESCE", "CURRENT_WATERMARK", "DEFAULT", "ELT",
    "ENDSWITH", "FROM_CHANGELOG", "GREATEST", "HIVE_AGG_DECIMAL_PLUS", "IFNULL", "INET_ATON",
    "INET_NTOA", "IS_JSON", "JSON", "JSON_ARRAY", "JSON_ARRAYAGG_ABSENT_ON_NULL",
    "JSON_ARRAYAGG_NULL_ON_NULL", "JSON_EXISTS", "JSON_OBJECT",
    "JSON_OBJECTAGG_ABSENT_ON_NULL", "JSON_OBJECTAGG_NULL_ON_NULL", "JSON_QUERY", "JSON_QUOTE",
    "JSON_STRING", "JSON_UNQUOTE", "JSON_VALUE", "LEAST", "LIKE", "MAP_ENTRIES",
    "MAP_FROM_ARRAYS", "MAP_KEYS", "MAP_UNION", "MAP_VALUES", "ML_PREDICT", "OBJECT_OF",
    "OBJECT_UPDATE", "PARSE_JSON", "PERCENTILE", "PRINTF", "REGEXP_COUNT",
    "REGEXP_EXTRACT_ALL", "REGEXP_INSTR", "REGEXP_SUBSTR", "SOURCE_WATERMARK", "SPLIT",
    "STARTSWITH", "TO_CHANGELOG", "TO_TIMESTAMP_LTZ", "TRANSLATE3", "TRY_CAST",
    "TRY_PARSE_JSON", "TYPEOF", "UNHEX", "URL_DECODE", "URL_ENCODE", "abs", "acos", "and",
    "array", "as", "asc", "ascii", "asin", "at", "atan", "atan2", "avg", "between", "bin",
    "cardinality", "cast", "ceil", "charLength", "chr", "collect", "concat", "concat_ws",
    "convertTz", "cos", "cosh", "cot", "count", "currentDatabase", "currentDate",
    "currentRowTimestamp", "currentTime", "currentTimestamp", "dateFormat", "decode",
    "degrees", "desc", "distinct", "divide", "e", "element", "encode", "end", "equals", "exp",
    "extract", "first_value", "flatten", "floor", "fromBase64", "fromUnixtime", "get",
    "greaterThan", "greaterThanOrEqual", "hex", "ifThenElse", "in", "initCap", "instr",
    "isFalse", "isNotFalse", "isNotNull", "isNotTrue", "isNull", "isTrue", "lag", "last_value",
    "lead", "left", "lessThan", "lessThanOrEqual", "listAgg", "ln", "localTime",
    "localTimestamp", "locate", "log", "log10", "log2", "lower", "lowerCase", "lpad", "ltrim",
    "map", "max", "md5", "min", "minus", "minusPrefix", "mod", "not", "notBetween",
    "notEquals", "now", "or", "over", "overlay", "parseUrl", "pi", "plus", "position", "power",
    "proctime", "radians", "rand", "randInteger", "rangeTo", "regexp", "regexpExtract",
    "regexpReplace", "reinterpretCast", "repeat", "replace", "reverse", "right", "round",
    "row", "rowtime", "rpad", "rtrim", "sha1", "sha2", "sha224", "sha256", "sha384", "sha512",
    "sign", "similar", "sin", "sinh", "splitIndex", "sqrt", "start", "stddevPop", "stddevSamp",
    "strToMap", "streamRecordTimestamp", "substr", "substring", "sum", "sum0", "tan", "tanh",
    "temporalOverlaps", "times", "timestampDiff", "toBase64", "toDate", "toTimestamp", "trim",
    "truncate", "unixTimestamp", "upper", "upperCase", "uuid", "varPop", "varSamp",
    "withColumns", "withoutColumns")


def sql_like(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    """The regular expression of a SQL ``LIKE`` pattern (``%``, ``_``, ``\\`` escaping the
    next character), as ``SHOW FUNCTIONS LIKE`` matches names (``ILIKE``: ignoring case)."""
    parts, escaped = [], False
    for char in pattern:
        if escaped or char not in "%_\\":
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            parts.append(".*" if char == "%" else ".")
    return re.compile("".join(parts), re.DOTALL | (re.IGNORECASE if ignore_case else 0))


class FlinkCollect(exp.Expression, exp.AggFunc):
    """``COLLECT([DISTINCT] x)``: the multiset of a group's non-NULL values (Flink's
    ``MULTISET<T>``), here a map of each value to its count, as Flink prints a multiset."""

    arg_types = {"this": True}
    _sql_names = ["COLLECT"]


def collect_sql(gen: Any, node: FlinkCollect) -> str:
    """``node`` as Flink SQL."""
    return f"COLLECT({gen.sql(node, 'this')})"


def builtin(node: exp.Expr, rewrite: Rewrite) -> exp.Expr | None:
    """The Spark form of a Flink built-in ``node``; None when it needs none."""
    if isinstance(node, FlinkCollect):
        return _collect(node, rewrite)
    if isinstance(node, exp.Bracket):
        return _subscript(node, rewrite)
    if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is not None:
        return _floor_ceil_to(node, rewrite)
    if isinstance(node, exp.Trunc) and node.args.get("decimals") is not None:
        return _truncate(node, rewrite)
    if isinstance(node, exp.SimilarTo):
        return _similar_to(node, rewrite)
    if isinstance(node, exp.ArrayReverse):
        return exp.Anonymous(this="reverse", expressions=[rewrite(node.this)])
    if isinstance(node, exp.Week):  # the ISO week of the year
        return exp.Anonymous(this="weekofyear", expressions=[rewrite(node.this)])
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.TIME) \
            and isinstance(node.this, exp.Literal) and node.this.is_string:
        return exp.Var(this=f"TIME '{node.this.name}'")  # Spark reads TIME literals only
    if isinstance(node, exp.Anonymous) and node.name.upper() in BUILTIN_CALLS:
        return _call(node.name.upper(), [rewrite(a) for a in node.expressions])
    if isinstance(node, exp.Overlaps):
        return _overlaps(node, rewrite)
    return None


def _is_time_cast(node: exp.Expr) -> bool:
    """A cast to TIME (``TIME '...'`` or ``CAST(x AS TIME(p))``)."""
    to = node.args.get("to")
    text = to.sql() if isinstance(to, exp.DataType) else str(to.this) if to is not None else ""
    return re.fullmatch(r"TIME(\(\d+\))?", text.upper().replace(" ", "")) is not None


def _overlaps(node: exp.Overlaps, rewrite: Rewrite) -> exp.Expr:
    """``(s0, e0) OVERLAPS (s1, e1)`` as Calcite expands it: an interval literal as the second
    of a pair is added to its first; each pair sorted; ``e0 >= s1 AND e1 >= s0``."""
    pairs = []
    for side in (node.this, node.expression):
        if not isinstance(side, exp.Tuple) or len(side.expressions) != 2:
            raise FlinkSqlError("OVERLAPS takes two (time point, time point or interval) pairs")
        if any(_is_time_cast(x) for x in side.expressions):  # TIME is text on Spark: no arithmetic
            raise FlinkSqlError("OVERLAPS of TIME values is not supported by sessioncluster")
        start, other = (rewrite(x.copy()) for x in side.expressions)
        end = exp.Add(this=start.copy(), expression=other) \
            if isinstance(side.expressions[1], exp.Interval) else other
        first = exp.LTE(this=start.copy(), expression=end.copy())
        pairs.append((exp.If(this=first, true=start.copy(), false=end.copy()),
                      exp.If(this=first.copy(), true=end, false=start)))
    (s0, e0), (s1, e1) = pairs
    return exp.Paren(this=exp.and_(exp.GTE(this=e0, expression=s1),
                                   exp.GTE(this=e1, expression=s0)))


def _collect(node: FlinkCollect, rewrite: Rewrite) -> exp.Expr:
    """The group's values (``collect_list`` skips NULLs, as Flink's CollectAggFunction does),
    each distinct one mapped to its count. The map's order is the values' sorted order: Flink's
    is its hash map's, which for small integers is the same."""
    if isinstance(node.parent, exp.Window):
        raise FlinkSqlError("COLLECT is not supported in OVER windows here (Flink docs: System "
                            "Functions / Aggregate Functions)")
    arg = node.this
    distinct = isinstance(arg, exp.Distinct)
    value = rewrite((arg.expressions[0] if distinct else arg).copy())
    values = exp.Anonymous(this="collect_set" if distinct else "collect_list", expressions=[value])
    keys = exp.Anonymous(this="array_sort", expressions=[
        exp.Anonymous(this="array_distinct", expressions=[values])])
    same = exp.EQ(this=exp.column("y"), expression=exp.column("e"))
    count = exp.Anonymous(this="size", expressions=[exp.Anonymous(this="filter", expressions=[
        values.copy(), exp.Lambda(this=same, expressions=[exp.to_identifier("y")])])])
    counts = exp.Anonymous(this="transform", expressions=[
        keys.copy(), exp.Lambda(this=count, expressions=[exp.to_identifier("e")])])
    return exp.Anonymous(this="map_from_arrays", expressions=[keys, counts])


def _call(name: str, args: list[exp.Expr]) -> exp.Expr:
    if name in ("LOG10", "LOG2"):  # Spark's own: LOG(10, x) is ln(x) / ln(10), 2.9999999999999996
        return exp.Anonymous(this=name.lower(), expressions=args)
    if name == "STR_TO_MAP":  # Flink's delimiters default to ',' and '='
        defaults = [exp.Literal.string(","), exp.Literal.string("=")]
        return exp.Anonymous(this="str_to_map", expressions=[*args, *defaults[len(args) - 1:]])
    if name.startswith("SHA"):
        return exp.Anonymous(this="sha2", expressions=[args[0], exp.Literal.number(name[3:])])
    if name == "SPLIT_INDEX":  # the separator is text, not a pattern; the index 0-based
        quoted = exp.Concat(expressions=[exp.Literal.string("\\Q"), args[1],
                                         exp.Literal.string("\\E")])
        parts = exp.Anonymous(this="split", expressions=[args[0], quoted])
        index = exp.Add(this=exp.paren(args[2]), expression=exp.Literal.number(1))
        return exp.Anonymous(this="try_element_at", expressions=[parts, index])
    if name in ("IS_ALPHA", "IS_DIGIT"):
        pattern = "^\\p{L}+$" if name == "IS_ALPHA" else "^\\p{Nd}+$"
        matches = exp.RegexpLike(this=args[0], expression=exp.Literal.string(pattern))
        return exp.Coalesce(this=matches, expressions=[exp.false()])
    if name == "IS_DECIMAL":
        parsed = exp.TryCast(this=args[0], to=exp.DataType.build("DOUBLE"), safe=True)
        return exp.Not(this=exp.Is(this=parsed, expression=exp.null()))
    if name == "ELEMENT":  # the one element of an array, NULL of an empty one
        size = exp.Anonymous(this="size", expressions=[args[0]])
        failure = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(
            "ELEMENT: the array has more than one element")])
        return exp.Case(ifs=[
            exp.If(this=exp.EQ(this=size, expression=exp.Literal.number(0)), true=exp.null()),
            exp.If(this=exp.EQ(this=size.copy(), expression=exp.Literal.number(1)),
                   true=exp.Anonymous(this="element_at", expressions=[
                       args[0].copy(), exp.Literal.number(1)]))], default=failure)
    # RAND_INTEGER([seed,] bound): an INT in [0, bound)
    rand = exp.Anonymous(this="rand", expressions=args[:-1])
    scaled = exp.Floor(this=exp.Mul(this=rand, expression=exp.paren(args[-1])))
    return exp.Cast(this=scaled, to=exp.DataType.build("INT"))


def _subscript(node: exp.Bracket, rewrite: Rewrite) -> exp.Expr:
    """``MAP[k, v, ...]`` constructs a map; ``a[i]`` is an array's element ``i`` counted from
    1 (Spark's ``a[i]`` counts from 0) or a map's value of key ``i``, NULL when there is none."""
    args = [rewrite(a) for a in node.expressions]
    target = node.this
    if isinstance(target, exp.Column) and not target.table and target.name.upper() == "MAP":
        return exp.Anonymous(this="map", expressions=args)
    if len(args) != 1:
        raise FlinkSqlError(f"{node.sql()}: a subscript takes one index")
    return exp.Anonymous(this="try_element_at", expressions=[rewrite(target), args[0]])


def _floor_ceil_to(node: exp.Floor | exp.Ceil, rewrite: Rewrite) -> exp.Expr:
    """``FLOOR(ts TO unit)`` and ``CEIL(ts TO unit)``: ``ts`` rounded down or up to the unit."""
    unit = node.args["to"].name.upper()
    value = rewrite(node.this)
    down = exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(unit), value])
    if isinstance(node, exp.Floor):
        return down
    up = exp.Add(this=down.copy(), expression=exp.Interval(this=exp.Literal.string("1"),
                                                           unit=exp.Var(this=unit)))
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=down, expression=value.copy()),
                                true=value.copy())], default=up)


def _truncate(node: exp.Trunc, rewrite: Rewrite) -> exp.Expr:
    """``TRUNCATE(x, n)``: ``x`` cut (towards zero) to ``n`` decimals."""
    value, decimals = rewrite(node.this), rewrite(node.args["decimals"])
    down = exp.Anonymous(this="floor", expressions=[value, decimals])
    up = exp.Anonymous(this="ceil", expressions=[value.copy(), decimals.copy()])
    return exp.Case(ifs=[exp.If(this=exp.GTE(this=value.copy(), expression=exp.Literal.number(0)),
                                true=down)], default=up)


def _similar_to(node: exp.SimilarTo, rewrite: Rewrite) -> exp.Expr:
    """``s SIMILAR TO pattern``: the whole of ``s`` matches the SQL regular expression (``%``
    any text, ``_`` one character, the rest as Java's regular expressions), as Calcite's."""
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise FlinkSqlError("SIMILAR TO takes a string literal as its pattern in sessioncluster")
    return exp.RegexpLike(this=rewrite(node.this),
                          expression=exp.Literal.string(f"^(?:{similar_regex(pattern.name)})$"))


def similar_regex(pattern: str) -> str:
    """The regular expression (Java's, Python's alike) of a SIMILAR TO ``pattern``: ``%`` any
    text, ``_`` one character, the rest as it is."""
    return "".join(".*" if c == "%" else "." if c == "_" else c for c in pattern)


#: Flink's integer types, narrowest first
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def integer_arithmetic(tree: exp.Expr, columns: dict[str, dict[str, str]],
                       typeable: Callable[[exp.Expr], exp.Expr]) -> None:
    """Flink's integer arithmetic in ``tree`` (in place): ``a / b`` of two integers is an
    integer (truncated: ``7 / 2`` is 3, ``-7 / 2`` is -3), and ``AVG`` and ``SIGN`` of an
    integer one of its type (``AVG`` of 1 and 2 is 1), where Spark gives a DOUBLE. The operands' types
    come from sqlglot's type inference over the tables' ``columns`` (Spark type text by column
    by table; ``typeable``: a copy of the tree with its Flink casts as sqlglot's); an operand of
    unknown type leaves its operation as Spark's."""
    for _ in range(4):  # again while a rewrite types an operation around it as an integer
        originals = [n for n in tree.walk(bfs=False) if _spark_typed(n)]
        if not originals:
            return
        typed = _typed(tree, columns, typeable)
        if typed is None:  # a query sqlglot cannot type keeps Spark's arithmetic
            return
        annotated = [n for n in typed.walk(bfs=False) if _spark_typed(n)]
        if len(originals) != len(annotated) or not any(
                _as_flink(node, types) for node, types in zip(originals, annotated)):
            return


def boolean_text(tree: exp.Expr, casts: list[exp.Expr], columns: dict[str, dict[str, str]],
                 typeable: Callable[[exp.Expr], exp.Expr]) -> None:
    """Flink's text of a BOOLEAN (in place): ``CAST(b AS STRING)`` (of ``casts``, the tree's
    Flink casts) is ``TRUE``/``FALSE``, where Spark gives ``true``/``false``. The operand's type
    comes from sqlglot's type inference, as for :func:`integer_arithmetic`; an operand of
    unknown type keeps Spark's text."""
    casts = [n for n in casts if _is_text(n)]
    if not casts:
        return
    for i, cast in enumerate(casts):
        cast.this.meta[_OPERAND] = i
    typed = _typed(tree, columns, typeable)
    booleans = set() if typed is None else {
        n.meta[_OPERAND] for n in typed.walk() if _OPERAND in n.meta
        and n.type is not None and n.type.is_type(exp.DataType.Type.BOOLEAN)}
    for i, cast in enumerate(casts):
        cast.this.meta.pop(_OPERAND, None)
        if i in booleans:
            cast.replace(exp.Upper(this=cast.copy()))


#: the mark of a cast's operand, found again in the typed copy of the tree
_OPERAND = "flink_cast_operand"


def _is_text(cast: exp.Expr) -> bool:
    """A cast to a character string type."""
    return str(cast.args["to"].this).upper().startswith(("STRING", "VARCHAR", "CHAR"))


def _typed(tree: exp.Expr, columns: dict[str, dict[str, str]],
           typeable: Callable[[exp.Expr], exp.Expr]) -> exp.Expr | None:
    """A copy of ``tree`` typed by sqlglot over the tables' ``columns``; None when sqlglot
    cannot type it."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.optimizer.annotate_types import annotate_types
    from sqlglot.optimizer.qualify import qualify

    schema: dict[str, object] = dict(columns)
    try:
        typed = qualify(typeable(tree), schema=schema, dialect="spark",
                        validate_qualify_columns=False, quote_identifiers=False)
        annotate_types(typed, schema=schema, dialect="spark", expression_metadata={
            **Spark.EXPRESSION_METADATA, exp.Sum: {"annotator": _flink_sum}})
    except Exception:  # noqa: BLE001 - sqlglot's inference is best effort
        return None
    return typed


def _flink_sum(annotator: Any, node: exp.Sum) -> exp.Expr:
    """Flink's type of ``SUM(x)``: x's (SUM of an INT is an INT, ``SUM(a) * 2`` too), where
    Spark's widens it (BIGINT)."""
    return annotator._annotate_by_args(node, "this")


def _spark_typed(node: exp.Expr) -> bool:
    """A division, AVG or SIGN not made Flink's yet."""
    return isinstance(node, (exp.Div, exp.Avg, exp.Sign)) and not (
        isinstance(node.parent, exp.Cast) and node.parent.args.get("flink_integer"))


def _as_flink(node: exp.Expr, types: exp.Expr) -> bool:
    """``node`` (typed as ``types``) replaced by Flink's integer form; False when it is not
    one of integers."""
    if isinstance(node, exp.Div):
        left, right = _integer(types.this), _integer(types.expression)
        if _spark_kind(types.this) == "FLOATING" or _spark_kind(types.expression) == "FLOATING":
            return _floating_division(node)
        if not (left and right):
            return False
        wider = max(left, right, key=_INTEGERS.index)
        division = exp.IntDiv(this=node.this.copy(), expression=node.expression.copy())
        node.replace(exp.Cast(this=division, to=exp.DataType.build(wider), flink_integer=True))
        return True
    argument = _integer(types.this)
    if argument is None:
        return False
    if isinstance(node, exp.Avg) and argument == "BIGINT" and not isinstance(
            node.parent, (exp.Window, exp.Filter)) and not isinstance(node.this, exp.Distinct):
        node.replace(_long_average(node.this))
        return True
    node.replace(exp.Cast(this=node.copy(), to=exp.DataType.build(argument), flink_integer=True))
    return True


def _long_average(value: exp.Expr) -> exp.Expr:
    """Flink's AVG of a BIGINT: the sum as a Java long (wrapping around), divided by the count
    (truncated); Spark's sums in a DOUBLE, which rounds past 2^53 and does not wrap."""
    total = _wrapped(exp.Sum(this=exp.Cast(this=value.copy(), to=exp.DataType.build(
        "DECIMAL(38, 0)"))), "BIGINT")
    quotient = exp.IntDiv(this=total, expression=exp.Count(this=value.copy()))
    return exp.Cast(this=quotient, to=exp.DataType.build("BIGINT"), flink_integer=True)


def _floating_division(node: exp.Div) -> bool:
    """Java's division of a DOUBLE by zero: +-Infinity, or NaN for 0 / 0 (Spark's ANSI mode
    raises). A division of constants is left to fail, as Flink's planner's does."""
    if node.find(exp.Column) is None:
        return False
    infinity = exp.Cast(this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE"))
    by_zero = exp.Mul(this=exp.paren(node.this.copy()), expression=infinity)
    quotient = exp.Anonymous(this="try_divide", expressions=[node.this.copy(),
                                                             node.expression.copy()])
    node.replace(exp.Case(ifs=[exp.If(this=exp.EQ(this=exp.paren(node.expression.copy()),
                                                  expression=exp.Literal.number(0)),
                                      true=by_zero)], default=quotient))
    return True


def _integer(node: exp.Expr | None) -> str | None:
    """The Flink integer type of a typed node; None for another or an unknown type."""
    kind = node.type.this.name if node is not None and node.type is not None else ""
    return {"TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT",
            "BIGINT": "BIGINT"}.get(kind)


def temporal_type(node: exp.Expr) -> str | None:
    """Flink's type of a timestamp or time expression whose precision Spark does not keep
    (Spark's are microseconds): ``TIMESTAMP '2026-01-02 03:04:05'`` is ``TIMESTAMP(0)``,
    ``TO_TIMESTAMP(s)`` ``TIMESTAMP(3)``, ``FLOOR(ts TO HOUR)``, ``TIMESTAMPADD`` and
    ``ts + INTERVAL ...`` keep their operand's; None when it is not known here."""
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        digits = len(node.this.name.partition(".")[2].strip())
        if node.to.is_type(exp.DataType.Type.TIME):
            return f"TIME({digits})"
        if node.to.is_type(exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ):
            return f"TIMESTAMP({digits})"
        return None
    if isinstance(node, exp.Anonymous) and node.name.upper() == "TO_TIMESTAMP":
        return "TIMESTAMP(3)"
    if isinstance(node, exp.Anonymous) and node.name.upper() == "TIMESTAMPADD" \
            and len(node.expressions) == 3:
        return temporal_type(node.expressions[2])
    if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is not None:
        return temporal_type(node.this)
    if isinstance(node, (exp.Add, exp.Sub)):
        if isinstance(node.expression, exp.Interval):
            return temporal_type(node.this)
        if isinstance(node, exp.Add) and isinstance(node.this, exp.Interval):
            return temporal_type(node.expression)
    if isinstance(node, exp.Paren):
        return temporal_type(node.this)
    return None


#: bits of Flink's integer types
_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
#: Spark's try_ form of an arithmetic operator (NULL where ANSI mode raises an overflow)
_TRY: dict[type, str] = {exp.Add: "try_add", exp.Sub: "try_subtract", exp.Mul: "try_multiply"}
#: the marks of an operation, and of an integer cast's operand, found again in the typed copy
_ARITHMETIC, _CAST_OPERAND = "flink_arithmetic", "flink_cast_operand_type"


def java_integers(tree: exp.Expr, casts: list[exp.Expr], columns: dict[str, dict[str, str]],
                  typeable: Callable[[exp.Expr], exp.Expr]) -> None:
    """Flink's (Java's) integer overflow in ``tree`` (in place), where Spark's ANSI mode
    raises: ``+``, ``-``, ``*``, unary ``-`` and SUM of integers wrap around within their type
    (``2147483647 + 1`` is -2147483648; SUM of an INT is an INT), ABS of the smallest value is
    itself; a ``CAST`` (of ``casts``,
    the tree's Flink casts) to an integer type keeps the low bits of a wider integer or
    DECIMAL and saturates a DOUBLE or FLOAT (NaN is 0; a SMALLINT or TINYINT is the low bits
    of the INT). The operands' types come from sqlglot's type inference as for
    :func:`integer_arithmetic`; an operand of unknown type keeps Spark's operation. Only an
    overflow takes the slow path: the operation is Spark's ``try_`` form, and its NULL is
    replaced by the exact result (DECIMAL(38, 0)) taken modulo the type's range."""
    for neg in list(tree.find_all(exp.Neg)):  # Calcite folds -(-2147483648): BIGINT 2147483648
        inner = neg.this.unnest()
        if isinstance(inner, exp.Neg) and isinstance(inner.this, exp.Literal) and inner.this.is_int:
            neg.replace(exp.Literal.number(int(inner.this.name)))
    nodes = [n for n in tree.walk() if isinstance(n, (*_TRY, exp.Neg, exp.Sum, exp.Abs))
             and not (isinstance(n, exp.Neg) and isinstance(n.this, exp.Literal))]
    casts = [c for c in casts if str(c.args["to"].this).upper() in _BITS
             and not c.args.get("safe")]
    if not nodes and not casts:
        return
    for i, node in enumerate(nodes):
        node.meta[_ARITHMETIC] = i
    for i, cast in enumerate(casts):
        cast.this.meta[_CAST_OPERAND] = i
    typed = _typed(tree, columns, typeable)
    kinds: dict[tuple[str, int], str | None] = {}
    for node in typed.walk() if typed is not None else []:
        if _ARITHMETIC in node.meta:
            argument = node.this.unnest() if isinstance(node, exp.Sum) else None
            if isinstance(argument, exp.Distinct):
                argument = argument.expressions[0]
            kinds["op", node.meta[_ARITHMETIC]] = _kind(argument or node)
        if _CAST_OPERAND in node.meta:
            kinds["cast", node.meta[_CAST_OPERAND]] = _kind(node) or _spark_kind(node)
    for node in nodes:
        node.meta.pop(_ARITHMETIC, None)
    for cast in casts:
        cast.this.meta.pop(_CAST_OPERAND, None)
    keys = {id(n): ("op", i) for i, n in enumerate(nodes)}
    keys.update({id(c): ("cast", i) for i, c in enumerate(casts)})
    for node in reversed(list(tree.walk(bfs=False))):  # an operation's operands first
        key = keys.get(id(node))
        kind = kinds.get(key) if key else None
        if kind is not None and key and key[0] == "op":
            _wrap_operation(node, kind)
        elif kind is not None:
            node.replace(_integer_cast(node.this, str(node.args["to"].this).upper(), kind))


def _kind(node: exp.Expr) -> str | None:
    """Flink's integer type of a typed expression: a literal's from its value (sqlglot types
    every integer literal as INT), an operation's the wider of its operands'."""
    node = node.unnest()
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return _literal_kind(-int(node.this.name)) if node.this.is_int else None
    if isinstance(node, exp.Literal):
        return _literal_kind(int(node.name)) if node.is_int else None
    if isinstance(node, exp.Neg):
        return _kind(node.this)
    if isinstance(node, tuple(_TRY)):
        left, right = _kind(node.this), _kind(node.expression)
        return max(left, right, key=_INTEGERS.index) if left and right else None
    return _integer(node)


def _literal_kind(value: int) -> str | None:
    return next((kind for kind in ("INT", "BIGINT") if _fits(value, kind)), None)


def _fits(value: int, kind: str) -> bool:
    return -(1 << (_BITS[kind] - 1)) <= value < 1 << (_BITS[kind] - 1)


def _spark_kind(node: exp.Expr) -> str | None:
    """FLOATING or DECIMAL for a typed expression of one of those types."""
    kind = node.type.this if node.type is not None else None
    if kind in (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT):
        return "FLOATING"
    return "DECIMAL" if kind == exp.DataType.Type.DECIMAL else None


def _wrapped(exact: exp.Expr, kind: str) -> exp.Expr:
    """``exact`` (an integer of a wider type) taken modulo the range of ``kind``."""
    half = exp.Literal.number(1 << (_BITS[kind] - 1))
    shifted = exp.Add(this=exact, expression=half)
    modulo = exp.Anonymous(this="pmod", expressions=[
        shifted, exp.Literal.number(1 << _BITS[kind])])
    return exp.Cast(this=exp.Sub(this=modulo, expression=half.copy()),
                    to=exp.DataType.build(kind))


def _exact(node: exp.Expr) -> exp.Expr:
    return exp.Cast(this=exp.paren(node.copy()), to=exp.DataType.build("DECIMAL(38, 0)"))


def _wrap_operation(node: exp.Expr, kind: str) -> None:
    """An integer operation of Flink type ``kind`` wrapping around on overflow."""
    if isinstance(node, exp.Sum):
        target: exp.Expr = node
        while isinstance(target.parent, (exp.Window, exp.Filter)):  # OVER, FILTER apply first
            target = target.parent
        argument = node.this.unnest()
        wider = "DECIMAL(38, 0)" if kind == "BIGINT" else "BIGINT"
        inner = argument.expressions[0] if isinstance(argument, exp.Distinct) else argument
        inner.replace(exp.Cast(this=inner.copy(), to=exp.DataType.build(wider)))
        target.replace(_wrapped(target.copy(), kind))
        return
    if isinstance(node, exp.Abs):  # Java's Math.abs of the smallest value is itself
        smallest = exp.Literal.number(-(1 << (_BITS[kind] - 1)))
        node.replace(exp.If(this=exp.EQ(this=node.this.copy(), expression=exp.Cast(
            this=smallest, to=exp.DataType.build(kind))), true=node.this.copy(),
            false=node.copy()))
        return
    if isinstance(node, exp.Neg):
        zero = exp.Cast(this=exp.Literal.number(0), to=exp.DataType.build(kind))
        fast = exp.Anonymous(this="try_subtract", expressions=[zero, node.this.copy()])
        exact: exp.Expr = exp.Neg(this=_exact(node.this))
    else:
        fast = exp.Anonymous(this=_TRY[type(node)], expressions=[
            node.this.copy(), node.expression.copy()])
        exact = type(node)(this=_exact(node.this), expression=_exact(node.expression))
    node.replace(exp.Coalesce(this=fast, expressions=[_wrapped(exact, kind)]))


def _integer_cast(value: exp.Expr, kind: str, source: str) -> exp.Expr:
    """Java's conversion of ``value`` (of Flink type ``source``) to the integer type
    ``kind``."""
    if value.is_int and _fits(value.to_py(), kind):
        return exp.Cast(this=value.copy(), to=exp.DataType.build(kind))  # a literal that fits
    fast = exp.TryCast(this=value.copy(), to=exp.DataType.build(kind), safe=True)
    if source == "FLOATING":
        target = kind if kind in ("BIGINT", "INT") else "INT"
        low, high = -(1 << (_BITS[target] - 1)), (1 << (_BITS[target] - 1)) - 1
        saturated: exp.Expr = exp.Case(ifs=[
            exp.If(this=exp.Anonymous(this="isnan", expressions=[value.copy()]),
                   true=exp.Literal.number(0)),
            exp.If(this=exp.GT(this=value.copy(), expression=exp.Literal.number(0)),
                   true=exp.Literal.number(high)),
            exp.If(this=exp.LT(this=value.copy(), expression=exp.Literal.number(0)),
                   true=exp.Literal.number(low))])
        if target != kind:  # Java's (short) and (byte) of a double: the low bits of its int
            inside = exp.Coalesce(this=exp.TryCast(this=value.copy(), to=exp.DataType.build(
                "INT"), safe=True), expressions=[saturated])
            saturated = _wrapped(exp.Cast(this=inside, to=exp.DataType.build("BIGINT")), kind)
        return exp.Coalesce(this=fast, expressions=[
            exp.Cast(this=saturated, to=exp.DataType.build(kind))])
    if source == "DECIMAL":  # BigDecimal's longValue: the integer part's low bits
        whole: exp.Expr = exp.Case(ifs=[exp.If(
            this=exp.LT(this=value.copy(), expression=exp.Literal.number(0)),
            true=exp.Ceil(this=value.copy()))], default=exp.Floor(this=value.copy()))
    elif _BITS[source] > _BITS[kind]:
        whole = value.copy()
    else:
        return exp.Cast(this=value.copy(), to=exp.DataType.build(kind))
    return exp.Coalesce(this=fast, expressions=[_wrapped(_exact(whole), kind)])


#: the mark of a SUM, AVG, ``+``, ``-`` or ``*``, found again in the typed copy of the tree
_FLOAT_OPERATION = "flink_float_operation"
_FLOAT_OPERATIONS = (exp.Sum, exp.Avg, exp.Add, exp.Sub, exp.Mul)


def float_aggregates(tree: exp.Expr, columns: dict[str, dict[str, str]],
                     typeable: Callable[[exp.Expr], exp.Expr]) -> None:
    """Flink's ``SUM`` and ``AVG`` of a FLOAT (in place): a FLOAT, where Spark's is a DOUBLE,
    and so ``+``, ``-``, ``*`` of a FLOAT with a FLOAT or an integer (Spark's ANSI mode makes
    a DOUBLE of a FLOAT and an INT). Spark's DOUBLE result is rounded to a FLOAT. Flink's SUM
    adds in single precision, in the order its records come (1.5 + 2.25 + 0.1 + 0.2 is
    4.0499997 there, 4.05 here); a fold in single precision here would add in Spark's order
    after the shuffle, not Flink's (PyFlink's tumble window example: 86.399994 where Flink
    prints 86.4), so the sum is left to Spark, order-free. The operands' types come from
    sqlglot's type inference, as for :func:`integer_arithmetic`."""
    nodes = list(tree.find_all(*_FLOAT_OPERATIONS))
    if not nodes:
        return
    for i, node in enumerate(nodes):
        node.meta[_FLOAT_OPERATION] = i
    typed = _typed(tree, columns, typeable)
    floats = set() if typed is None else {
        n.meta[_FLOAT_OPERATION] for n in typed.find_all(*_FLOAT_OPERATIONS)
        if _FLOAT_OPERATION in n.meta and _of_floats(n)}
    for node in nodes:
        node.meta.pop(_FLOAT_OPERATION, None)
    for i in sorted(floats, reverse=True):  # an operation's operands (found later) first
        _as_float(nodes[i])


def _of_floats(node: exp.Expr) -> bool:
    """A typed SUM or AVG of a FLOAT, or an arithmetic of a FLOAT with a FLOAT or integer."""
    if isinstance(node, (exp.Sum, exp.Avg)):
        return _is(_argument(node), exp.DataType.Type.FLOAT)
    operands = (node.this.unnest(), node.expression.unnest())
    return any(_is(o, exp.DataType.Type.FLOAT) for o in operands) and all(
        _is(o, exp.DataType.Type.FLOAT, *exp.DataType.INTEGER_TYPES) for o in operands)


def _is(node: exp.Expr, *kinds: Any) -> bool:
    return node.type is not None and node.type.is_type(*kinds)


def _as_float(node: exp.Expr) -> None:
    """``node`` of Flink's FLOAT type made a FLOAT on Spark."""
    target: exp.Expr = node
    while isinstance(target.parent, (exp.Window, exp.Filter)):  # OVER, FILTER apply first
        target = target.parent
    target.replace(exp.Cast(this=target.copy(), to=exp.DataType.build("FLOAT")))


def _argument(aggregate: exp.Expr) -> exp.Expr:
    argument = aggregate.this.unnest()
    return argument.expressions[0] if isinstance(argument, exp.Distinct) else argument


#: TIMESTAMPADD's units under a day: of a DATE, a TIMESTAMP(6) from its midnight in Flink
SUB_DAY_UNITS = ("SECOND", "MINUTE", "HOUR")
#: TIMESTAMPADD's units of a day or more: of a DATE, a DATE in Flink
DAY_UNITS = ("DAY", "WEEK", "MONTH", "QUARTER", "YEAR")
#: the mark of a TIMESTAMPADD's operand, found again in the typed copy of the tree
_DATED = "flink_timestampadd_operand"


def is_timestampadd(node: exp.Expr) -> bool:
    """A ``TIMESTAMPADD(unit, n, t)`` call."""
    return isinstance(node, exp.Anonymous) and node.name.upper() == "TIMESTAMPADD" \
        and len(node.expressions) == 3


def timestampadd_of_date(call: exp.Expr) -> exp.Expr:
    """``call``, a TIMESTAMPADD of a DATE, as Flink's, where Spark's is a TIMESTAMP WITH LOCAL
    TIME ZONE by any unit: a DATE by DAY, WEEK, MONTH, QUARTER or YEAR, a TIMESTAMP from the
    date's midnight by SECOND, MINUTE or HOUR (``call`` changed in place, or wrapped)."""
    unit = call.expressions[0].name.upper()
    if unit in SUB_DAY_UNITS:
        call.expressions[2].replace(exp.cast(call.expressions[2].copy(), "TIMESTAMP_NTZ"))
        return call
    if unit in DAY_UNITS:
        return exp.cast(call, exp.DataType.Type.DATE)
    return call


def dated_timestampadd(tree: exp.Expr, columns: dict[str, dict[str, str]],
                       typeable: Callable[[exp.Expr], exp.Expr]) -> None:
    """Each ``TIMESTAMPADD`` of a DATE in ``tree`` as Flink's (:func:`timestampadd_of_date`, in
    place). The operand's type comes from sqlglot's type inference, as for
    :func:`integer_arithmetic`; an operand of unknown type keeps Spark's TIMESTAMPADD."""
    calls = [n for n in tree.find_all(exp.Anonymous) if is_timestampadd(n)]
    if not calls:
        return
    for i, call in enumerate(calls):
        call.expressions[2].meta[_DATED] = i
    typed = _typed(tree, columns, typeable)
    dates = set() if typed is None else {
        n.meta[_DATED] for n in typed.walk() if _DATED in n.meta
        and _is(n, exp.DataType.Type.DATE)}
    for i, call in enumerate(calls):
        call.expressions[2].meta.pop(_DATED, None)
    for i in sorted(dates, reverse=True):  # an inner call (found later) first
        wrapped = timestampadd_of_date(calls[i])
        if wrapped is not calls[i]:
            calls[i].replace(wrapped)
