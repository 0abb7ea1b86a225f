"""Spark's physical plan (the ``SparkPlan`` a query runs as, through py4j) as the nodes Flink's
EXPLAIN prints for the same operators: ``ProjectExec``/``FilterExec`` -> ``Calc``, a partial
``HashAggregateExec`` -> ``LocalHashAggregate``, its final one -> ``HashAggregate(isMerge=[true])``,
``ShuffleExchangeExec`` -> ``Exchange(distribution=[hash[...]])``, joins -> ``HashJoin`` /
``SortMergeJoin`` / ``NestedLoopJoin``, ``TakeOrderedAndProjectExec`` -> ``SortLimit``, a scan ->
``TableSourceScan(table=[[default_catalog, default_database, t]], fields=[...])``. Spark's wrappers
(whole-stage code generation, adaptive execution's stages) are left out, as Flink prints no
code generation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .explain import PlanNode

_IDS = re.compile(r"#\d+L?")
#: Spark's nodes that only wrap the operator under them
_WRAPPERS = {"WholeStageCodegenExec", "InputAdapter", "ColumnarToRowExec", "RowToColumnarExec",
             "AQEShuffleReadExec", "ReusedExchangeExec", "ShuffleQueryStageExec",
             "BroadcastQueryStageExec", "TableCacheQueryStageExec"}
_SCANS = {"FileSourceScanExec", "BatchScanExec", "RDDScanExec", "LocalTableScanExec",
          "InMemoryTableScanExec", "DataSourceV2ScanExec", "RowDataSourceScanExec"}
_JOIN_TYPES = {"Inner": "InnerJoin", "LeftOuter": "LeftOuterJoin", "RightOuter": "RightOuterJoin",
               "FullOuter": "FullOuterJoin", "LeftSemi": "LeftSemiJoin", "LeftAnti": "LeftAntiJoin",
               "Cross": "InnerJoin"}
#: a connector reading its files in Python: a map over the scan of their paths
_PYTHON_READS = {"MapInArrowExec", "MapInPandasExec", "BatchEvalPythonExec"}
_PYTHON = {"BatchEvalPythonExec": "PythonCalc", "ArrowEvalPythonExec": "PythonCalc",
           "AggregateInPandasExec": "PythonGroupAggregate",
           "ArrowAggregatePythonExec": "PythonGroupAggregate",
           "FlatMapGroupsInPandasExec": "PythonGroupTableAggregate",
           "MapInPandasExec": "PythonCalc", "MapInArrowExec": "PythonCalc",
           "BatchEvalPythonUDTFExec": "PythonCorrelate", "ArrowEvalPythonUDTFExec": "PythonCorrelate",
           "GenerateExec": "Correlate", "ExpandExec": "Expand", "UnionExec": "Union",
           "WindowExec": "OverAggregate", "SortExec": "Sort",
           "WindowGroupLimitExec": "WindowRank"}


def _seq(value: Any) -> list[Any]:
    """A Scala Seq (through py4j) as a list."""
    return [value.apply(i) for i in range(value.size())]


def text(expr: Any) -> str:
    """A Spark expression as text without its expression ids (``cnt#1 * 2`` -> ``cnt * 2``)."""
    return _java_integers(_IDS.sub("", str(expr.toString())))


def _texts(exprs: Any) -> str:
    return ", ".join(text(e) for e in _seq(exprs))


class _Scans:
    """Which catalog table each scan reads: by path, else by its columns, in query order."""

    def __init__(self, tables: Sequence[tuple[str, Sequence[str], str]]) -> None:
        self.tables = list(tables)
        self.used: list[str] = []

    def name(self, columns: list[str], path: str) -> str:
        candidates = [t for t in self.tables if path and t[2] and t[2].rstrip("/") in path]
        candidates += [t for t in self.tables
                       if {c.lower() for c in columns} <= {c.lower() for c in t[1]}]
        fresh = [t for t in candidates if t[0] not in self.used]
        chosen = (fresh or candidates or [("?", [], "")])[0]
        self.used.append(chosen[0])
        return chosen[0]


def translate(plan: Any, tables: Sequence[tuple[str, Sequence[str], str]],
              windows: Sequence[str] = ()) -> PlanNode:
    """Spark's physical plan under Flink's names; ``tables``: (name, columns, path) of the
    tables the query reads, in the order it names them; ``windows``: the window table-valued
    functions the query calls, as WindowTableFunction prints them, in order."""
    node = _node(_unwrap(plan), _Scans(tables))
    _name_windows(node, list(windows))
    return node


def _name_windows(node: PlanNode, windows: list[str]) -> None:
    """The Calc computing a window TVF's hidden window (``__w``, see the planner) is Flink's
    WindowTableFunction."""
    for child in node.inputs:
        _name_windows(child, windows)
    if node.name == "Calc" and windows and any(" AS __w" in a for a in node.attrs):
        node.name, node.attrs = "WindowTableFunction", [f"window=[{windows.pop(0)}]"]


def _unwrap(plan: Any) -> Any:
    kind = plan.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":
        return _unwrap(plan.executedPlan())
    if kind in ("ShuffleQueryStageExec", "BroadcastQueryStageExec", "TableCacheQueryStageExec"):
        return _unwrap(plan.plan())
    if kind in _WRAPPERS:
        return _unwrap(_seq(plan.children())[0])
    return plan


def _node(plan: Any, scans: _Scans) -> PlanNode:
    kind = plan.getClass().getSimpleName()
    children = [_unwrap(c) for c in _seq(plan.children())]
    if kind in _PYTHON_READS and len(children) == 1 and \
            children[0].getClass().getSimpleName() in _SCANS:
        kind, children = "RDDScanExec", []  # a connector's files read by Python: one scan
    inputs = [_node(c, scans) for c in children]
    fields = [("", str(a.name())) for a in _seq(plan.output())]
    node = _translated(plan, kind, inputs, fields, scans)
    node.fields = fields
    return node


def _translated(plan: Any, kind: str, inputs: list[PlanNode], fields: list[tuple[str, str]],
                scans: _Scans) -> PlanNode:
    if kind == "ProjectExec":
        select = f"select=[{_texts(plan.projectList())}]"
        if inputs and inputs[0].name == "Calc" and not any(
                a.startswith("select=") for a in inputs[0].attrs):  # Filter + Project: one Calc
            return PlanNode("Calc", [select, *inputs[0].attrs], inputs[0].inputs)
        return PlanNode("Calc", [select], inputs)
    if kind == "FilterExec":
        return PlanNode("Calc", [f"where=[{text(plan.condition())}]"], inputs)
    if kind in _SCANS:
        names = [n for _, n in fields]
        path = ""
        if kind == "FileSourceScanExec":
            path = ",".join(str(p.toString()) for p in _seq(plan.relation().location().rootPaths()))
        table = scans.name(names, path)
        return PlanNode("TableSourceScan", [f"table=[[default_catalog, default_database, {table}]]",
                                            f"fields=[{', '.join(names)}]"], inputs)
    if kind in ("HashAggregateExec", "ObjectHashAggregateExec", "SortAggregateExec"):
        return _aggregate(plan, kind, inputs)
    if kind == "ShuffleExchangeExec":
        return PlanNode("Exchange", [f"distribution=[{_distribution(plan.outputPartitioning())}]"],
                        inputs)
    if kind == "BroadcastExchangeExec":
        return PlanNode("Exchange", ["distribution=[broadcast]"], inputs)
    if kind.endswith("JoinExec") or kind == "CartesianProductExec":
        return _join(plan, kind, inputs, fields)
    if kind == "TakeOrderedAndProjectExec":
        return PlanNode("SortLimit", [f"orderBy=[{_texts(plan.sortOrder())}]", "offset=[0]",
                                      f"fetch=[{plan.limit()}]", "global=[true]"], inputs)
    if kind in ("GlobalLimitExec", "LocalLimitExec", "CollectLimitExec"):
        return PlanNode("Limit", ["offset=[0]", f"fetch=[{plan.limit()}]",
                                  f"global=[{'false' if kind == 'LocalLimitExec' else 'true'}]"],
                        inputs)
    if kind == "SortExec":
        return PlanNode("Sort", [f"orderBy=[{_texts(plan.sortOrder())}]"], inputs)
    if kind == "WindowExec":
        return PlanNode("OverAggregate", [f"partitionBy=[{_texts(plan.partitionSpec())}]",
                                          f"orderBy=[{_texts(plan.orderSpec())}]",
                                          f"select=[{_texts(plan.windowExpression())}]"], inputs)
    if kind == "UnionExec":
        return PlanNode("Union", ["all=[true]",
                                  f"union=[{', '.join(n for _, n in fields)}]"], inputs)
    name = _PYTHON.get(kind, kind.removesuffix("Exec"))
    return PlanNode(name, [f"select=[{', '.join(n for _, n in fields)}]"], inputs)


def _aggregate(plan: Any, kind: str, inputs: list[PlanNode]) -> PlanNode:
    """Spark's two-phase aggregation as Flink prints it: LocalHashAggregate (Partial_SUM...)
    under HashAggregate(isMerge=[true]) (Final_SUM...); one phase: HashAggregate."""
    keys = [text(k) for k in _seq(plan.groupingExpressions())]
    calls, modes = [], set()
    for agg in _seq(plan.aggregateExpressions()):
        mode = str(agg.mode().toString())
        modes.add(mode)
        function = agg.aggregateFunction()
        args = ", ".join(text(c) for c in _seq(function.children()))
        if str(function.prettyName()) == "sum":
            args = _WIDENED_SUM.sub(r"\1", args)
        prefix = {"Partial": "Partial_", "Final": "Final_", "PartialMerge": "Merge_"}.get(mode, "")
        distinct = "DISTINCT " if agg.isDistinct() else ""
        calls.append(f"{prefix}{str(function.prettyName()).upper()}({distinct}{args})")
    sort = "Sort" if kind == "SortAggregateExec" else "Hash"
    select = f"select=[{', '.join(keys + calls)}]"
    group = [f"groupBy=[{', '.join(keys)}]"] if keys else []
    if modes and modes <= {"Partial"}:
        return PlanNode(f"Local{sort}Aggregate", [*group, select], inputs)
    merge = ["isMerge=[true]"] if modes & {"Final", "PartialMerge"} else []
    return PlanNode(f"{sort}Aggregate", [*merge, *group, select], inputs)


def _distribution(partitioning: Any) -> str:
    kind = partitioning.getClass().getSimpleName().rstrip("$")
    if kind == "HashPartitioning":
        return f"hash[{_texts(partitioning.expressions())}]"
    if kind == "RangePartitioning":
        return f"range[{_texts(partitioning.ordering())}]"
    if kind == "SinglePartition":
        return "single"
    if kind == "RoundRobinPartitioning":
        return "any"
    return text(partitioning)


def unique_names(names: Sequence[str]) -> list[str]:
    """Flink's field names of a join's two inputs: a repeated name gets 0, 1... appended."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in seen:
            out.append(f"{name}{seen[name]}")
            seen[name] += 1
        else:
            seen[name] = 0
            out.append(name)
    return out


def _join(plan: Any, kind: str, inputs: list[PlanNode], fields: list[tuple[str, str]]
          ) -> PlanNode:
    name = {"SortMergeJoinExec": "SortMergeJoin", "ShuffledHashJoinExec": "HashJoin",
            "BroadcastHashJoinExec": "HashJoin"}.get(kind, "NestedLoopJoin")
    join_type = "InnerJoin"
    if kind != "CartesianProductExec":
        join_type = _JOIN_TYPES.get(str(plan.joinType().toString()), str(plan.joinType()))
    conditions = []
    if name != "NestedLoopJoin" and len(inputs) == 2:
        left = [n for _, n in inputs[0].fields]
        right = [n for _, n in inputs[1].fields]
        renamed = dict(zip(right, unique_names(left + right)[len(left):]))
        conditions = [f"({text(lk)} = {renamed.get(text(rk), text(rk))})" for lk, rk in
                      zip(_seq(plan.leftKeys()), _seq(plan.rightKeys()))]
    other = plan.condition()
    if other.isDefined():
        conditions.append(text(other.get()))
    where = " AND ".join(conditions) or "true"
    attrs = [f"joinType=[{join_type}]", f"where=[{where}]",
             f"select=[{', '.join(unique_names([n for _, n in fields]))}]"]
    if kind in ("BroadcastHashJoinExec", "ShuffledHashJoinExec", "BroadcastNestedLoopJoinExec"):
        side = str(plan.buildSide().toString())
        attrs.append(f"build=[{'left' if 'Left' in side else 'right'}]")
    if kind.startswith("Broadcast"):
        attrs.append("broadcast=[true]")
    return PlanNode(name, attrs, inputs)



def _java_integers(expression: str) -> str:
    """``expression`` without the wrap-around of Flink's integer overflow
    (``builtins.java_integers``): ``coalesce(a * b, cast((pmod(...) - n) as int))`` is
    ``a * b``, ``cast((pmod((sum(x) + n), m) - n) as int)`` is ``sum(x)``."""
    out, i = [], 0
    while i < len(expression):
        if expression.startswith("coalesce(", i):
            args, end = _arguments(expression, i + len("coalesce"))
            if len(args) == 2 and args[1].startswith("cast((pmod("):
                out.append(_java_integers(args[0]))
                i = end
                continue
        if expression.startswith("cast((pmod((", i):
            (shifted,), end = _arguments(expression, i + len("cast((pmod("))
            _, after = _arguments(expression, i + len("cast("))  # (pmod(...) - n)
            if " + " in shifted and expression.startswith(" as ", after):
                out.append(_java_integers(shifted[:shifted.rindex(" + ")]))
                i = expression.index(")", after) + 1
                continue
        out.append(expression[i])
        i += 1
    return "".join(out)


#: the argument of a SUM of integers widened for its wrap-around
_WIDENED_SUM = re.compile(r"cast\((.+) as (?:bigint|decimal\(38,0\))\)")


def _arguments(text_: str, open_: int) -> tuple[list[str], int]:
    """The comma-separated arguments of the parenthesis at ``open_``, and the index after its
    closing one."""
    depth, start, args = 0, open_ + 1, []
    for j in range(open_, len(text_)):
        if text_[j] == "(":
            depth += 1
        elif text_[j] == ")":
            depth -= 1
            if depth == 0:
                args.append(text_[start:j].strip())
                return args, j + 1
        elif text_[j] == "," and depth == 1:
            args.append(text_[start:j].strip())
            start = j + 1
    return [text_[open_:]], len(text_)
