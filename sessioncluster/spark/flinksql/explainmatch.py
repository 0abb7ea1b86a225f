"""EXPLAIN of a MATCH_RECOGNIZE as Flink 2.3 prints it: the logical ``LogicalMatch`` (input fields
by index: ``partition=[[1]]``, DEFINE's ``PREV(A.$3, 0)``) and the physical ``Match`` (by name:
``partitionBy=[symbol]``, ``measures=[FINAL(A.id) AS aid]``), the same node name in BATCH and
STREAMING, over an ``Exchange`` by the PARTITION BY columns (``single`` without). The rows are
matched here by :mod:`.matchrecognize` after Spark groups them by those columns.
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from sqlglot import exp

from .matchexpr import AGGREGATES
from .matchrecognize import MatchPlan, read_plan
from .patternmatch import Element, Skip
from .planner import interval_ms

#: an expression as Flink prints it in a plan (:meth:`.explain.AstBuilder.rex`)
Rex = Callable[[exp.Expr], str]


def logical_match(node: exp.MatchRecognize, inputs: Sequence[str], rex: Rex
                  ) -> tuple[list[str], list[str]]:
    """``LogicalMatch``'s attributes over the input fields ``inputs``, and its output fields
    (the PARTITION BY columns, then the MEASURES)."""
    plan = read_plan(node)
    position = {n.lower(): i for i, n in enumerate(inputs)}
    outputs = [*plan.partition, *(n for n, _ in plan.measures)]
    order = ", ".join(f"{position.get(o.lower(), '?')} ASC-nulls-first" for o in plan.order)
    keys = ", ".join(str(position.get(p.lower(), "?")) for p in plan.partition)
    attrs = [f"partition=[[{keys}]]",
             f"order=[[{order}]]", f"outputFields=[[{', '.join(outputs)}]]", "allRows=[false]",
             f"after=[{_after(plan.skip, logical=True)}]",
             f"pattern=[{pattern_text(plan.elements)}]",
             "isStrictStarts=[false]", "isStrictEnds=[false]"]
    within = node.args.get("within")
    if within is not None:
        unit = (within.text("unit") or "SECOND").upper().rstrip("S")
        attrs.append(f"interval=[{interval_ms(within)}:INTERVAL {unit}]")
    definitions = ", ".join(c for _, c in _definitions(node, position, rex))
    attrs += ["subsets=[[]]", f"patternDefinitions=[[{definitions}]]",
              f"inputFields=[[{', '.join(inputs)}]]"]
    return attrs, outputs


def physical_match(node: exp.MatchRecognize, inputs: Mapping[str, str], rex: Rex
                   ) -> list[str]:
    """The physical ``Match``'s attributes (Flink's ``Match`` in BATCH and STREAMING);
    ``inputs``: the input's columns and their Spark types (``int``, ``decimal(10,2)``...)."""
    plan = read_plan(node)
    position = {n.lower(): i for i, n in enumerate(inputs)}
    types = {n.lower(): t for n, t in inputs.items()}
    measures = []
    for measure in node.args.get("measures") or []:
        item = measure.this
        body = item.this if isinstance(item, exp.Alias) else item
        measures.append(f"FINAL({rex(_named(body, types))}) AS {item.alias_or_name}")
    partition = [f"partitionBy=[{', '.join(plan.partition)}]"] if plan.partition else []
    define = ", ".join(f"{v}={c}" for v, c in _definitions(node, position, rex))
    return [*partition, f"orderBy=[{', '.join(o + ' ASC' for o in plan.order)}]",
            f"measures=[{', '.join(measures)}]", "rowsPerMatch=[ONE ROW PER MATCH]",
            f"after=[{_after(plan.skip, logical=False)}]",
            f"pattern=[{pattern_text(plan.elements)}]", f"define=[{{{define}}}]"]


def distribution(plan: MatchPlan) -> str:
    """The Exchange under the Match: by the PARTITION BY columns, else all rows to one."""
    return f"hash[{', '.join(plan.partition)}]" if plan.partition else "single"


def pattern_text(elements: Sequence[Element]) -> str:
    """The PATTERN as Calcite prints it: concatenations nested to the left, each quantified
    variable ``PATTERN_QUANTIFIER('A', low, high or -1, reluctant)``."""
    texts = []
    for e in elements:
        name = f"_UTF-16LE'{e.variable}'"
        if (e.low, e.high) == (1, 1):
            texts.append(name)
            continue
        reluctant = not e.greedy and e.low != e.high and (e.low, e.high) != (0, 1)
        high = -1 if e.high is None else e.high
        texts.append(f"PATTERN_QUANTIFIER({name}, {e.low}, {high}, {str(reluctant).lower()})")
    text = texts[0]
    for t in texts[1:]:
        text = f"({text}, {t})"
    return text


def _after(skip: Skip, logical: bool) -> str:
    if skip.variable is None:
        return f"FLAG(SKIP {skip.kind})" if logical else f"SKIP {skip.kind}"
    name = f"_UTF-16LE'{skip.variable}'"
    return f"SKIP {skip.kind}({name})" if logical else f"SKIP {skip.kind} {name}"


def _definitions(node: exp.MatchRecognize, position: dict[str, int], rex: Rex
                 ) -> list[tuple[str, str]]:
    """Each DEFINE's variable and condition, its columns by input index: the variable's own
    row ``PREV(A.$3, 0)``, another variable's last ``LAST(B.$3, 0)``."""
    out = []
    for item in node.args.get("define") or []:
        out.append((item.alias, rex(_indexed(item.this, item.alias, position))))
    return out


def _indexed(condition: exp.Expr, variable: str, position: dict[str, int]) -> exp.Expr:
    def ref(column: exp.Column) -> str:
        return f"{column.table or '*'}.${position.get(column.name.lower(), '?')}"

    def replace(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            last = "PREV" if n.table == variable else "LAST"  # no variable: all rows' last
            return exp.Var(this=f"{last}({ref(n)}, 0)")
        return _call(n, ref) or n

    return condition.copy().transform(replace)


def _call(n: exp.Expr, ref: Callable[[exp.Column], str]) -> exp.Var | None:
    """``FIRST``/``LAST``/``PREV`` or an aggregate of a column as Flink prints it, its column
    by ``ref``: ``LAST(A.$3, 0)``, ``SUM(C.$3)``, ``COUNT()``; a time unit operand
    (``TIMESTAMPADD(DAY, ...)``) is made no column."""
    if isinstance(n, exp.Anonymous) and n.name.upper() in ("TIMESTAMPADD", "TIMESTAMPDIFF") \
            and n.expressions and isinstance(n.expressions[0], exp.Column):
        n.expressions[0].replace(exp.Var(this=n.expressions[0].name.upper()))
        return None
    if isinstance(n, exp.Anonymous) and n.name.upper() in ("FIRST", "LAST", "PREV") \
            and n.expressions and isinstance(n.expressions[0], exp.Column):
        offset = n.expressions[1].name if len(n.expressions) > 1 else "0"
        return exp.Var(this=f"{n.name.upper()}({ref(n.expressions[0])}, {offset})")
    kind = AGGREGATES.get(type(n))
    if kind is not None and isinstance(n.this, exp.Column):
        return exp.Var(this=f"{kind}({ref(n.this)})")
    if kind == "COUNT" and isinstance(n.this, exp.Star):
        return exp.Var(this="COUNT()")
    return None


def _named(measure: exp.Expr, types: Mapping[str, str]) -> exp.Expr:
    """A measure with its variables' columns by name (``A.id``, ``LAST(B.price, 0)``, a
    column of all rows ``*.price``), an AVG as Flink computes it of the column's type."""
    def ref(column: exp.Column) -> str:
        return f"{column.table or '*'}.{column.name}"

    def replace(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            return exp.Var(this=ref(n))
        if isinstance(n, exp.Avg) and isinstance(n.this, exp.Column):
            average = _average(ref(n.this), types.get(n.this.name.lower(), ""))
            return exp.Var(this=average) if average else n
        if isinstance(n, exp.Cast) and isinstance(n.this, exp.Column):
            return exp.Var(this=f"CAST({ref(n.this)} AS {n.to.sql(dialect='spark').upper()})")
        return _call(n, ref) or n

    return measure.copy().transform(replace)


def _average(column: str, spark_type: str) -> str | None:
    """``AVG(column)`` as Flink 2.3 prints it (SUM / COUNT in the average's type) for the types
    recorded: INT, BIGINT, DOUBLE, DECIMAL(p, s); None for another."""
    ratio = f"/(SUM({column}), COUNT({column}))"
    if spark_type == "int":
        return f"CAST({ratio} AS INTEGER)"
    if spark_type in ("bigint", "double"):
        return ratio
    decimal = re.fullmatch(r"decimal\((\d+),(\d+)\)", spark_type)
    if decimal is not None:
        scale = max(6, int(decimal.group(2)))
        return f"/(CAST(SUM({column}) AS DECIMAL(38, {scale})), COUNT({column}))"
    return None
