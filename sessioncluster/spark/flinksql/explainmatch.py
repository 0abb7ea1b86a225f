"""EXPLAIN of a MATCH_RECOGNIZE as Flink 2.3 prints it: the logical ``LogicalMatch`` (input fields
by index: ``partition=[[1]]``, DEFINE's ``PREV(A.$3, 0)``) and the physical ``Match`` (by name:
``partitionBy=[symbol]``, ``measures=[FINAL(A.id) AS aid]``), the same node name in BATCH and
STREAMING, over an ``Exchange`` by the PARTITION BY columns (``single`` without). The rows are
matched here by :mod:`.matchrecognize` after Spark groups them by those columns.
"""

from __future__ import annotations

from typing import Callable, Sequence

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
    order = ", ".join(f"{position[o.lower()]} ASC-nulls-first" for o in plan.order)
    attrs = [f"partition=[[{', '.join(str(position[p.lower()]) for p in plan.partition)}]]",
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


def physical_match(node: exp.MatchRecognize, inputs: Sequence[str], rex: Rex) -> list[str]:
    """The physical ``Match``'s attributes (Flink's ``Match`` in BATCH and STREAMING)."""
    plan = read_plan(node)
    position = {n.lower(): i for i, n in enumerate(inputs)}
    measures = []
    for measure in node.args.get("measures") or []:
        item = measure.this
        body = item.this if isinstance(item, exp.Alias) else item
        measures.append(f"FINAL({rex(_named(body))}) AS {item.alias_or_name}")
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
        return f"{column.table or variable}.${position.get(column.name.lower(), '?')}"

    def replace(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            own = not n.table or n.table == variable
            return exp.Var(this=f"{'PREV' if own else 'LAST'}({ref(n)}, 0)")
        if isinstance(n, exp.Anonymous) and n.name.upper() in ("FIRST", "LAST", "PREV") \
                and n.expressions and isinstance(n.expressions[0], exp.Column):
            offset = n.expressions[1].name if len(n.expressions) > 1 else "0"
            return exp.Var(this=f"{n.name.upper()}({ref(n.expressions[0])}, {offset})")
        kind = AGGREGATES.get(type(n))
        if kind is not None and isinstance(n.this, exp.Column):
            return exp.Var(this=f"{kind}({ref(n.this)})")
        return n

    return condition.copy().transform(replace)


def _named(measure: exp.Expr) -> exp.Expr:
    """A measure with its variables' columns by name: ``A.id``, ``LAST(B.price, 0)``."""
    def replace(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            return exp.Var(this=n.sql())
        if isinstance(n, exp.Anonymous) and n.name.upper() in ("FIRST", "LAST") \
                and n.expressions and isinstance(n.expressions[0], exp.Column):
            offset = n.expressions[1].name if len(n.expressions) > 1 else "0"
            return exp.Var(this=f"{n.name.upper()}({n.expressions[0].sql()}, {offset})")
        kind = AGGREGATES.get(type(n))
        if kind is not None and isinstance(n.this, exp.Column):
            return exp.Var(this=f"{kind}({n.this.sql()})")
        return n

    return measure.copy().transform(replace)
