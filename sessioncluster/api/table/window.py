"""PyFlink's group and over windows of the Table API (``pyflink.table.window``).

A group window renders as a Flink SQL window table-valued function (``TUMBLE``, ``HOP``,
``SESSION``) over a named input; an over window renders as the text of an ``OVER (...)`` clause.

>>> from sessioncluster.api.table.expressions import col
>>> w = Tumble.over(lit(10).minutes).on(col('ts')).alias('w')
>>> print(w.tvf_sql('t'))
TUMBLE(TABLE t, DESCRIPTOR(`ts`), INTERVAL '10' MINUTE)
"""

from __future__ import annotations

from typing import Any

from .expression import Expression, lit
from .expressions import CURRENT_RANGE, CURRENT_ROW, as_expression, expressions_sql


def _name(alias: Any) -> str:
    e = as_expression(alias)
    if e.name is None:
        raise ValueError(f"a window alias is a name (col('w') or 'w'), not {e.to_sql()}")
    return e.name


def _time_interval(size: Any, what: str) -> str:
    e = as_expression(size) if not isinstance(size, (int, float)) else lit(size)
    if e.interval is not None and e.interval[1] == "ROWS":
        raise NotImplementedError(
            f"a row-count {what} ({e.interval[0]} rows) is a legacy row-count group window, "
            "which Flink SQL's window TVFs do not have; use a time interval "
            "(lit(10).seconds)")
    if e.interval is None:
        raise ValueError(f"the {what} of a group window is a time interval (lit(10).seconds), "
                         f"not {e.to_sql()}")
    return e.to_sql()


class GroupWindow:
    """A group window: its time attribute, its alias, and its table-valued function."""

    def __init__(self) -> None:
        self.time_field: str | None = None
        self.alias_name: str | None = None

    def _on(self, time_field: Any) -> Any:
        self.time_field = _name(time_field)
        return self

    def _alias(self, alias: Any) -> "GroupWindow":
        self.alias_name = _name(alias)
        return self

    def _args(self) -> list[str]:
        raise NotImplementedError

    def _function(self) -> str:
        raise NotImplementedError

    def tvf_sql(self, input_name: str, keys: list[str] | None = None) -> str:
        """The window TVF over the table or view ``input_name``; ``keys``: the group keys
        beside the window (a session window's partition: Flink's group window keeps a session
        per key)."""
        if self.time_field is None or self.alias_name is None:
            raise ValueError("a group window needs .on(time attribute) and .alias(name)")
        table = f"TABLE {input_name}"
        if keys and self._partitioned:
            table += f" PARTITION BY {', '.join(keys)}"
        args = [table, f"DESCRIPTOR({as_expression(self.time_field).to_sql()})", *self._args()]
        return f"{self._function()}({', '.join(args)})"

    #: the window's extent depends on its key's rows (a session), not on time alone
    _partitioned = False


class TumbleWithSizeOnTimeWithAlias(GroupWindow):
    """``Tumble.over(size).on(time).alias(w)``."""

    def __init__(self, size: str) -> None:
        super().__init__()
        self.size = size

    def _function(self) -> str:
        return "TUMBLE"

    def _args(self) -> list[str]:
        return [self.size]

    def on(self, time_field: Any) -> "TumbleWithSizeOnTimeWithAlias":
        return self._on(time_field)

    def alias(self, alias: Any) -> "TumbleWithSizeOnTimeWithAlias":
        self._alias(alias)
        return self


class Tumble:
    """Tumbling windows: fixed size, no overlap."""

    @classmethod
    def over(cls, size: Any) -> TumbleWithSizeOnTimeWithAlias:
        return TumbleWithSizeOnTimeWithAlias(_time_interval(size, "size"))


class SlideWithSizeAndSlideOnTimeWithAlias(GroupWindow):
    """``Slide.over(size).every(slide).on(time).alias(w)`` (Flink SQL's ``HOP``)."""

    def __init__(self, size: str, slide: str | None = None) -> None:
        super().__init__()
        self.size = size
        self.slide = slide

    def every(self, slide: Any) -> "SlideWithSizeAndSlideOnTimeWithAlias":
        self.slide = _time_interval(slide, "slide")
        return self

    def _function(self) -> str:
        return "HOP"

    def _args(self) -> list[str]:
        if self.slide is None:
            raise ValueError("a Slide window needs .every(slide)")
        return [self.slide, self.size]

    def on(self, time_field: Any) -> "SlideWithSizeAndSlideOnTimeWithAlias":
        return self._on(time_field)

    def alias(self, alias: Any) -> "SlideWithSizeAndSlideOnTimeWithAlias":
        self._alias(alias)
        return self


class Slide:
    """Sliding windows: fixed size, a new one every ``slide``."""

    @classmethod
    def over(cls, size: Any) -> SlideWithSizeAndSlideOnTimeWithAlias:
        return SlideWithSizeAndSlideOnTimeWithAlias(_time_interval(size, "size"))


class SessionWithGapOnTimeWithAlias(GroupWindow):
    """``Session.with_gap(gap).on(time).alias(w)``."""

    def __init__(self, gap: str) -> None:
        super().__init__()
        self.gap = gap

    _partitioned = True

    def _function(self) -> str:
        return "SESSION"

    def _args(self) -> list[str]:
        return [self.gap]

    def on(self, time_field: Any) -> "SessionWithGapOnTimeWithAlias":
        return self._on(time_field)

    def alias(self, alias: Any) -> "SessionWithGapOnTimeWithAlias":
        self._alias(alias)
        return self


class Session:
    """Session windows: a window closes after ``gap`` without records."""

    @classmethod
    def with_gap(cls, gap: Any) -> SessionWithGapOnTimeWithAlias:
        return SessionWithGapOnTimeWithAlias(_time_interval(gap, "gap"))


class OverWindow:
    """An over window: partitioning, ordering, bounds, alias; renders its ``OVER`` clause."""

    def __init__(self, partition_by: list[Expression], order_by: Expression | None = None) -> None:
        self.partition_by_exprs = partition_by
        self.order_by_expr = order_by
        self.preceding_expr: Expression | None = None
        self.following_expr: Expression | None = None
        self.alias_name: str | None = None

    def order_by(self, order_by: Any) -> "OverWindow":
        self.order_by_expr = as_expression(order_by)
        return self

    def preceding(self, preceding: Any) -> "OverWindow":
        self.preceding_expr = as_expression(preceding)
        return self

    def following(self, following: Any) -> "OverWindow":
        self.following_expr = as_expression(following)
        return self

    def alias(self, alias: Any) -> "OverWindow":
        self.alias_name = _name(alias)
        return self

    def over_sql(self) -> str:
        """The text inside ``OVER (...)``."""
        if self.order_by_expr is None:
            raise ValueError("an over window needs .order_by(time attribute)")
        parts = []
        if self.partition_by_exprs:
            parts.append(f"PARTITION BY {expressions_sql(self.partition_by_exprs)}")
        parts.append(f"ORDER BY {self.order_by_expr.to_sql()}")
        if self.preceding_expr is not None:
            parts.append(self._frame(self.preceding_expr))
        return " ".join(parts)

    def _frame(self, preceding: Expression) -> str:
        unit = (preceding.interval or (None, "RANGE"))[1]
        rows = unit == "ROWS"
        following = self.following_expr
        if following is None:
            following = CURRENT_ROW if rows else CURRENT_RANGE
        start = preceding.to_sql()
        start = start if start == "CURRENT ROW" else f"{start} PRECEDING"
        end = following.to_sql()
        end = end if end == "CURRENT ROW" else f"{end} FOLLOWING"
        return f"{'ROWS' if rows else 'RANGE'} BETWEEN {start} AND {end}"


class Over:
    """Over windows: ``Over.partition_by(...).order_by(...).preceding(...).alias('w')``."""

    @classmethod
    def partition_by(cls, *partition_by: Any) -> OverWindow:
        return OverWindow([as_expression(p) for p in partition_by])

    @classmethod
    def order_by(cls, order_by: Any) -> OverWindow:
        return OverWindow([], as_expression(order_by))
