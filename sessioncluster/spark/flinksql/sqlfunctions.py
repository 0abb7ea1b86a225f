"""Flink SQL's common scalar functions over Python values, for a condition evaluated in Python
(:mod:`.sqlcondition`: MATCH_RECOGNIZE's DEFINE, the updating join's condition).

:func:`scalar_function` gives a node's function of its operands' values and the operand nodes;
a NULL operand makes a NULL (but ``COALESCE``). As Flink: ``MOD`` and ``%`` keep the dividend's
sign (Java's), ``ROUND`` rounds half away from zero, ``SUBSTRING`` counts from 1, ``POWER``,
``SQRT``, ``LN`` and ``EXP`` are DOUBLE, ``CAST`` to an integral type truncates,
``TIMESTAMPADD`` by ``MONTH``, ``QUARTER`` or ``YEAR`` keeps the day or takes the month's last
(Jan 31 + 1 MONTH is Feb 29 in 2024), by ``SECOND``, ``MINUTE`` or ``HOUR`` of a
DATE is a TIMESTAMP from its midnight, ``LIKE`` matches the whole text (``%`` any text, ``_`` one
character, ``ESCAPE`` before ``%``, ``_`` or itself: its literal; case-sensitive), ``SIMILAR
TO`` as :func:`.builtins.similar_regex` reads its pattern.
"""

from __future__ import annotations

import calendar
import datetime
import functools
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Callable, Sequence

from sqlglot import exp

from .builtins import similar_regex
from .dialect import FlinkCast
from .model import FlinkSqlError

#: a function of its operands' values
Function = Callable[..., Any]


def java_mod(a: Any, b: Any) -> Any:
    """``a % b`` with the dividend's sign (Java's)."""
    if isinstance(a, int) and isinstance(b, int):
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    return math.fmod(a, b)


def _round(x: Any, digits: int = 0) -> Any:
    if isinstance(x, int) and digits >= 0:
        return x
    value = Decimal(str(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return type(x)(value) if isinstance(x, (float, int)) else value


def _substring(s: str, start: int, length: int | None = None) -> str:
    begin = max(start - 1, 0) if start > 0 else max(len(s) + start, 0)
    return s[begin:] if length is None else s[begin:begin + max(length, 0)]


def _sign(x: Any) -> Any:
    return type(x)((x > 0) - (x < 0))


_UNITS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 604800}
_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}
#: the units by which TIMESTAMPADD of a DATE is a TIMESTAMP (by the others a DATE)
_SUB_DAY = ("SECOND", "MINUTE", "HOUR")


def add_months(value: datetime.date, months: int) -> datetime.date:
    """``value`` (a DATE or TIMESTAMP) ``months`` later, as Flink adds months: the same day of
    the month, or the month's last day when it has fewer."""
    year, month = divmod(value.year * 12 + value.month - 1 + months, 12)
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def _timestamp_add(unit: str, n: int, ts: datetime.date) -> datetime.date:
    if unit in _MONTHS:
        return add_months(ts, _MONTHS[unit] * n)
    if unit in _SUB_DAY and not isinstance(ts, datetime.datetime):
        ts = datetime.datetime.combine(ts, datetime.time())  # Flink's: a DATE's TIMESTAMP(6)
    return ts + datetime.timedelta(seconds=_UNITS[unit] * n)


@functools.lru_cache(maxsize=256)
def like_regex(pattern: str, escape: str | None = None) -> re.Pattern[str]:
    """The regular expression of a LIKE ``pattern`` (Calcite's ``sqlToRegexLike``); FlinkSqlError
    in Flink's words for an escape character before anything but ``%``, ``_`` or itself."""
    if escape is not None and len(escape) != 1:
        raise FlinkSqlError(f"Invalid escape character '{escape}'")
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape:
            if i + 1 == len(pattern) or pattern[i + 1] not in ("_", "%", escape):
                raise FlinkSqlError(f"Invalid escape sequence '{pattern}', {i}")
            out.append(re.escape(pattern[i + 1]))
            i += 1
        elif c == "_":
            out.append(".")
        elif c == "%":
            out.append("(?s:.*)")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def _like(node: exp.Like, escape: exp.Expr | None) -> tuple[Function, list[exp.Expr], bool]:
    """``[NOT] LIKE``; a constant pattern is checked now (Flink refuses it when it plans)."""
    negate = bool(node.args.get("negate"))
    pattern = node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string and \
            (escape is None or isinstance(escape, exp.Literal) and escape.is_string):
        like_regex(pattern.name, escape.name if escape is not None else None)

    def like(text: str, pattern: str, escape_char: str | None = None) -> bool:
        return (like_regex(pattern, escape_char).fullmatch(text) is not None) != negate
    operands = [node.this, node.expression] + ([escape] if escape is not None else [])
    return like, operands, True


@functools.lru_cache(maxsize=256)
def _similar_compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(similar_regex(pattern))


def _similar_to(text: str, pattern: str) -> bool:
    return _similar_compiled(pattern).fullmatch(text) is not None


_STRICT: dict[type, Function] = {
    exp.Abs: abs, exp.Upper: str.upper, exp.Lower: str.lower, exp.Initcap: str.title,
    exp.Length: len, exp.Floor: math.floor, exp.Ceil: math.ceil, exp.Round: _round,
    exp.Pow: lambda a, b: float(a) ** float(b), exp.Sqrt: lambda a: math.sqrt(a),
    exp.Ln: lambda a: math.log(a), exp.Exp: lambda a: math.exp(a), exp.Sign: _sign,
    exp.Mod: java_mod, exp.Substring: _substring, exp.Replace: str.replace,
    exp.DPipe: lambda *s: "".join(map(str, s)), exp.Concat: lambda *s: "".join(map(str, s)),
    exp.Greatest: lambda *v: max(v), exp.Least: lambda *v: min(v),
    exp.Nullif: lambda a, b: None if a == b else a, exp.SimilarTo: _similar_to,
}
_ANONYMOUS: dict[str, Function] = {"CHAR_LENGTH": len, "CHARACTER_LENGTH": len}
_CASTS: dict[str, Function] = {
    "INT": int, "INTEGER": int, "BIGINT": int, "SMALLINT": int, "TINYINT": int,
    "DOUBLE": float, "FLOAT": float, "REAL": float, "STRING": str, "VARCHAR": str,
    "CHAR": str, "DECIMAL": lambda v: Decimal(str(v)), "BOOLEAN": bool,
}


def scalar_function(node: exp.Expr) -> tuple[Function, Sequence[exp.Expr], bool] | None:
    """``node``'s function, its operand nodes and whether a NULL operand makes it NULL; None
    when ``node`` is not one of these functions. FlinkSqlError for one refused by name."""
    if isinstance(node, exp.Like):
        return _like(node, None)
    if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
        return _like(node.this, node.expression)
    if isinstance(node, exp.Coalesce):
        return (lambda *v: next((x for x in v if x is not None), None),
                [node.this, *node.expressions], False)
    if isinstance(node, exp.Trim) and node.args.get("expression") is None \
            and not node.args.get("position"):
        return str.strip, [node.this], True
    if isinstance(node, FlinkCast):
        to = str(node.args["to"].this).upper().split("(")[0].strip()
        cast = _CASTS.get(to)
        if cast is None:
            raise FlinkSqlError(f"{node.sql()} in a condition evaluated by sessioncluster is "
                                "not supported")
        return (lambda v: int(v) if cast is int and not isinstance(v, str) else cast(v)), \
            [node.this], True
    if isinstance(node, exp.Anonymous):
        name = node.name.upper()
        if name == "TIMESTAMPADD" and len(node.expressions) == 3:
            unit = node.expressions[0].name.upper()
            if unit not in _UNITS and unit not in _MONTHS:
                raise FlinkSqlError(f"TIMESTAMPADD by {unit} in a condition evaluated by "
                                    "sessioncluster is not supported")
            return (lambda n, ts: _timestamp_add(unit, n, ts)), node.expressions[1:], True
        function = _ANONYMOUS.get(name)
        return (function, node.expressions, True) if function is not None else None
    function = _STRICT.get(type(node))
    if function is None:
        return None
    operands = [node.args[k] for k in node.arg_types
                if k in ("this", "expression", "start", "length", "decimals", "replacement")
                and isinstance(node.args.get(k), exp.Expr)] + list(node.expressions)
    return function, operands, True
