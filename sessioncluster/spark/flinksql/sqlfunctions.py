"""Flink SQL's common scalar functions over Python values, for a condition evaluated in Python
(:mod:`.sqlcondition`: MATCH_RECOGNIZE's DEFINE, the updating join's condition).

:func:`scalar_function` gives a node's function of its operands' values and the operand nodes;
a NULL operand makes a NULL (but ``COALESCE``). As Flink: ``MOD`` and ``%`` keep the dividend's
sign (Java's), ``ROUND`` rounds half away from zero, ``SUBSTRING`` counts from 1, ``POWER``,
``SQRT``, ``LN`` and ``EXP`` are DOUBLE, ``CAST`` to an integral type truncates.
"""

from __future__ import annotations

import datetime
import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Callable, Sequence

from sqlglot import exp

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


def _timestamp_add(unit: str, n: int, ts: datetime.datetime) -> datetime.datetime:
    return ts + datetime.timedelta(seconds=_UNITS[unit] * n)


_STRICT: dict[type, Function] = {
    exp.Abs: abs, exp.Upper: str.upper, exp.Lower: str.lower, exp.Initcap: str.title,
    exp.Length: len, exp.Floor: math.floor, exp.Ceil: math.ceil, exp.Round: _round,
    exp.Pow: lambda a, b: float(a) ** float(b), exp.Sqrt: lambda a: math.sqrt(a),
    exp.Ln: lambda a: math.log(a), exp.Exp: lambda a: math.exp(a), exp.Sign: _sign,
    exp.Mod: java_mod, exp.Substring: _substring, exp.Replace: str.replace,
    exp.DPipe: lambda *s: "".join(map(str, s)), exp.Concat: lambda *s: "".join(map(str, s)),
    exp.Greatest: lambda *v: max(v), exp.Least: lambda *v: min(v),
    exp.Nullif: lambda a, b: None if a == b else a,
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
            if unit not in _UNITS:
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
