"""Flink's common type of several types (``LogicalTypeMerging``, Calcite's ``leastRestrictive``
with Flink's type system) and its DECIMAL precision rules.

A pure module (no Spark), under :mod:`.flinktypes`: the type of a CASE's branches, of a
``VALUES`` column, of a set operation's column (``UNION``, ``INTERSECT``, ``EXCEPT``).
"""

from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from ...api.table.types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DataTypes,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    NullType,
    NumericType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
)

MAX_DECIMAL = 38
#: the least scale an adjusted DECIMAL keeps (Flink's ``MINIMUM_ADJUSTED_SCALE``)
MIN_ADJUSTED_SCALE = 6
INT_RANK: dict[type, int] = {TinyIntType: 1, SmallIntType: 2, IntType: 3, BigIntType: 4}
#: the DECIMAL an integer is in DECIMAL arithmetic (its digits)
INT_DIGITS: dict[type, int] = {TinyIntType: 3, SmallIntType: 5, IntType: 10, BigIntType: 19}


def decimal_of(t: DataType) -> tuple[int, int]:
    """An exact number's DECIMAL precision and scale (an integer's digits, scale 0)."""
    if isinstance(t, DecimalType):
        return t.precision, t.scale
    return INT_DIGITS[type(t)], 0


def adjust_precision_scale(precision: int, scale: int) -> tuple[int, int]:
    """Flink's ``LogicalTypeMerging.adjustPrecisionScale``: a precision over 38 gives up scale,
    down to 6 digits, to keep the integer digits."""
    if precision <= MAX_DECIMAL:
        return max(precision, 1), scale
    integer_digits = precision - scale
    return MAX_DECIMAL, max(MAX_DECIMAL - integer_digits, min(scale, MIN_ADJUSTED_SCALE))


def decimal_result(kind: type, a: DataType, b: DataType) -> tuple[int, int]:
    """The DECIMAL precision and scale of ``a <kind> b`` (``exp.Add``, ``exp.Sub``, ``exp.Mul``,
    ``exp.Div``; another kind is MOD), as Flink's ``LogicalTypeMerging``."""
    (p1, s1), (p2, s2) = decimal_of(a), decimal_of(b)
    if kind in (exp.Add, exp.Sub):
        scale = max(s1, s2)
        return adjust_precision_scale(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if kind is exp.Mul:
        return adjust_precision_scale(p1 + p2 + 1, s1 + s2)
    if kind is exp.Div:
        scale = max(MIN_ADJUSTED_SCALE, s1 + p2 + 1)
        return adjust_precision_scale(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)  # MOD
    return adjust_precision_scale(min(p1 - s1, p2 - s2) + scale, scale)


def approximate(a: DataType, b: DataType) -> DataType | None:
    """FLOAT with FLOAT or an integer stays FLOAT; DOUBLE, or a DECIMAL with either, is DOUBLE.
    (Flink 2.3 types FLOAT with DOUBLE as FLOAT: not claimed here.)"""
    kinds = {type(a), type(b)}
    if kinds == {FloatType, DoubleType}:
        return None
    if DoubleType in kinds or DecimalType in kinds:
        return DataTypes.DOUBLE()
    return DataTypes.FLOAT()


def least_restrictive(types: Sequence[DataType]) -> DataType | None:
    """The type all of ``types`` convert to (Calcite's ``leastRestrictive`` with Flink's type
    system: CHARs of different lengths give a VARCHAR), nullable if one of them is."""
    nullable = any(t.is_nullable or isinstance(t, NullType) for t in types)
    known = [t for t in types if not isinstance(t, NullType)]
    if not known:
        return DataTypes.NULL()
    result = _merge(known)
    if result is None:
        return None
    return result.nullable() if nullable else result.not_null()


def _merge(types: list[DataType]) -> DataType | None:
    first = types[0]
    for fixed_kind, varying in ((CharType, DataTypes.VARCHAR), (BinaryType, DataTypes.VARBINARY)):
        if all(isinstance(t, fixed_kind) for t in types):
            length = max(t.length for t in types)  # type: ignore[attr-defined]
            if all(type(t) is fixed_kind and t.length == length
                   for t in types):
                return fixed_kind(length)
            return varying(length)
    if all(isinstance(t, NumericType) for t in types):
        return _merge_numbers(types)
    if all(isinstance(t, ArrayType) for t in types):
        element = least_restrictive([t.element_type for t in types])  # type: ignore[attr-defined]
        return None if element is None else DataTypes.ARRAY(element)
    if all(type(t) is type(first) for t in types):
        if isinstance(first, (TimestampType, LocalZonedTimestampType, TimeType)):
            return type(first)(max(t.precision for t in types))  # type: ignore[attr-defined]
        if isinstance(first, (BooleanType, DateType)):
            return first
        if all(t.nullable() == first.nullable() for t in types):
            return first
    return None


def _merge_numbers(types: list[DataType]) -> DataType | None:
    if any(isinstance(t, DoubleType) for t in types):
        return DataTypes.DOUBLE()
    if any(isinstance(t, FloatType) for t in types):
        # with a DECIMAL: DOUBLE (Flink 2.3's UNION of a FLOAT and a DECIMAL(5, 3) column)
        decimal = any(isinstance(t, DecimalType) for t in types)
        return DataTypes.DOUBLE() if decimal else DataTypes.FLOAT()
    if any(isinstance(t, DecimalType) for t in types):
        pairs = [decimal_of(t) for t in types]
        scale = max(s for _, s in pairs)
        digits = max(p - s for p, s in pairs)
        return DataTypes.DECIMAL(min(MAX_DECIMAL, digits + scale), scale)
    return max(types, key=lambda t: INT_RANK[type(t)])
