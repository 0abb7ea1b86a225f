"""``EXPLAIN`` as Flink prints it: ``== Abstract Syntax Tree ==`` (Flink's logical nodes of the
statement as written: LogicalProject, LogicalFilter, LogicalAggregate, LogicalJoin,
LogicalMatch (:mod:`.explainmatch`), LogicalTableScan...), ``== Optimized Physical Plan ==`` and
``== Optimized Execution Plan ==`` (the operators Spark really runs, under Flink's names: Calc,
LocalHashAggregate/HashAggregate, Exchange(distribution=[hash[...]]), HashJoin, SortLimit, Match,
TableSourceScan...), then Spark's own physical plan under ``== Spark Physical Plan ==``.

No Calcite optimisation is pretended: the AST is the query's parse tree; the physical sections are
Spark's plan (its partial and final aggregates, its exchanges) named as Flink names the same
operators. ``CHANGELOG_MODE`` adds each node's changelog mode in STREAMING (insert-only, or
``I,UB,UA`` from a group aggregate on); ``ESTIMATED_COST`` adds Spark's statistics to its section.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from .dialect import Descriptor, Flink, TableArgument, output_name
from .explainmatch import logical_match
from .jsonfunctions import FlinkJsonArrayAgg, FlinkJsonObjectAgg
from .model import FlinkSqlError

#: Flink's ``ExplainDetail`` names this planner prints
SUPPORTED_DETAILS = ("ESTIMATED_COST", "CHANGELOG_MODE", "PLAN_ADVICE")
#: what Flink's plan advice says of a plan none of its analyzers has advice for
NO_ADVICE = "No available advice..."
#: STREAMING: Spark's partial and final aggregates (the final one keeps its state in Spark's
#: state store) under the names of Flink's two-phase streaming aggregates
_STREAMING_AGGREGATES = {
    False: {"LocalHashAggregate": "LocalGroupAggregate", "HashAggregate": "GlobalGroupAggregate"},
    True: {"LocalHashAggregate": "LocalWindowAggregate", "HashAggregate": "GlobalWindowAggregate"},
}
#: every ``ExplainDetail`` of Flink 2.3
FLINK_DETAILS = ("ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE")
_PATH = "default_catalog, default_database"
_INSERT_ONLY = "I"
_UPDATES = "I,UB,UA"


@dataclass
class PlanNode:
    """One node of a printed plan: its name, its ``key=[value]`` attributes, its inputs."""

    name: str
    attrs: list[str] = field(default_factory=list)
    inputs: list["PlanNode"] = field(default_factory=list)
    #: its output fields as (qualifier, name); the AST resolves ``$i`` references with them
    fields: list[tuple[str, str]] = field(default_factory=list)
    #: what a CHANGELOG_MODE explain adds (``I`` or ``I,UB,UA``); "" when unknown
    changelog: str = ""

    def line(self, changelog: bool) -> str:
        attrs = list(self.attrs)
        if changelog and self.changelog:
            attrs.append(f"changelogMode=[{self.changelog}]")
        return f"{self.name}({', '.join(attrs)})"


def render(node: PlanNode, changelog: bool = False) -> str:
    """A plan as Flink prints it: ``+-`` before the last input, ``:-`` before the others."""
    lines: list[str] = []

    def walk(n: PlanNode, lead: str, branch: str) -> None:
        lines.append(lead + branch + n.line(changelog))
        child_lead = lead + ("" if not branch else (":  " if branch == ":- " else "   "))
        for i, child in enumerate(n.inputs):
            walk(child, child_lead, "+- " if i == len(n.inputs) - 1 else ":- ")

    walk(node, "", "")
    return "\n".join(lines)


def check_details(details: Sequence[str]) -> None:
    """FlinkSqlError naming an ExplainDetail this planner cannot print."""
    for detail in details:
        if detail not in SUPPORTED_DETAILS:
            raise FlinkSqlError(
                f"EXPLAIN {detail} is not supported by sessioncluster: its plans are Spark's "
                f"(supported: {', '.join(SUPPORTED_DETAILS)}; Flink docs: SQL / EXPLAIN "
                "Statements)")


def explain_text(asts: Sequence[PlanNode], physicals: Sequence[PlanNode], spark_plan: str,
                 details: Sequence[str], streaming: bool, updating: bool = False) -> str:
    """The text of an EXPLAIN: Flink's three sections (a tree per sink of a statement set)
    and Spark's plan; ``updating``: a query is what Flink calls updating (plan advice)."""
    changelog = streaming and "CHANGELOG_MODE" in details
    if changelog:
        for physical in physicals:
            _changelog_modes(physical)

    def trees(nodes: Sequence[PlanNode], with_changelog: bool = False) -> str:
        return "\n\n".join(render(n, with_changelog) for n in nodes)

    optimized = ("Optimized Physical Plan", trees(physicals, changelog))
    if "PLAN_ADVICE" in details:
        optimized = ("Optimized Physical Plan With Advice",
                     f"{optimized[1]}\n\n{plan_advice(updating, streaming)}")
    sections = [("Abstract Syntax Tree", trees(asts)),
                optimized,
                ("Optimized Execution Plan", trees(physicals)),
                ("Spark Physical Plan", spark_plan.strip())]
    return "\n\n".join(f"== {title} ==\n{body}" for title, body in sections) + "\n"


def plan_advice(updating: bool, streaming: bool) -> str:
    """Flink's plan advice for a plan that none of its analyzers advises on. Flink's two
    analyzers look at a STREAMING plan's group aggregates (local-global aggregation by
    mini-batch settings) and at updating streams (non-deterministic updates), both of Flink's
    own runtime: such a plan is refused, as an advice of Flink's would be about a runtime this
    is not."""
    if streaming and updating:
        raise FlinkSqlError("EXPLAIN PLAN_ADVICE of a STREAMING query with a group aggregate or "
                            "an updating stream is not supported by sessioncluster: Flink's "
                            "advice there (mini-batch, local-global aggregation, non-deterministic "
                            "updates) is about Flink's own runtime (Flink docs: SQL / EXPLAIN "
                            "Statements)")
    return NO_ADVICE


def as_streaming(node: PlanNode, windowed: bool,
                 watermarks: Mapping[str, tuple[str, str]], group_window: bool = False
                 ) -> PlanNode:
    """STREAMING: a physical plan's aggregates under Flink's streaming names, and each scan of
    a table with a watermark under its WatermarkAssigner. ``group_window``: a Python
    aggregation is a group window's (``PythonGroupWindowAggregate``). A Python aggregation
    keeps its state per key, unsorted."""
    node.inputs = [as_streaming(child, windowed, watermarks, group_window)
                   for child in node.inputs]
    if node.name == "PythonGroupAggregate":
        node.inputs = [c.inputs[0] if c.name == "Sort" and c.inputs else c for c in node.inputs]
        node.name = "PythonGroupWindowAggregate" if group_window else node.name
    renamed = _STREAMING_AGGREGATES[windowed].get(node.name)
    if renamed is not None:
        node.name = renamed
        node.attrs = [a for a in node.attrs if a != "isMerge=[true]"]
    if node.name == "TableSourceScan":
        table = node.attrs[0].rsplit(", ", 1)[-1].rstrip("]")
        if table in watermarks:
            rowtime, expression = watermarks[table]
            return PlanNode("WatermarkAssigner", [f"rowtime=[{rowtime}]",
                                                  f"watermark=[{expression}]"], [node],
                            node.fields)
    return node


def as_table_aggregate(node: PlanNode, attrs: list[str], outputs: list[str]) -> PlanNode:
    """STREAMING: a ``flat_aggregate``'s plan as Flink's, one ``PythonGroupTableAggregate``
    (``attrs``) over the exchange by its keys, as the job runs it on keyed state, in place of
    Spark's batch form (each group's rows aggregated into an array by a Python aggregate,
    unnested by a Correlate); a Calc above it that only names its ``outputs`` is left out."""
    def aggregate_below(n: PlanNode) -> PlanNode | None:
        while len(n.inputs) == 1 and n.name != "PythonGroupAggregate":
            n = n.inputs[0]
        return n if n.name == "PythonGroupAggregate" else None

    def rewrite(n: PlanNode) -> PlanNode:
        found = aggregate_below(n) if n.name == "Correlate" else None
        if found is None:
            n.inputs = [rewrite(child) for child in n.inputs]
            if n.name == "Calc" and len(n.inputs) == 1 \
                    and n.inputs[0].name == "PythonGroupTableAggregate":
                n.attrs = [re.sub(r"\b_r\.(\w+) AS \1\b", r"\1", a) for a in n.attrs]
                if n.attrs == [f"select=[{', '.join(outputs)}]"]:
                    return n.inputs[0]
            return n
        below = found.inputs[0] if found.inputs else None
        while below is not None and below.name == "Sort" and below.inputs:
            below = below.inputs[0]
        return PlanNode("PythonGroupTableAggregate", attrs, [below] if below else [], n.fields)

    return rewrite(node)


def as_python_group_aggregate(node: PlanNode, attrs: list[str]) -> PlanNode:
    """STREAMING: a group aggregation calling Python aggregate functions as Flink plans it, one
    ``PythonGroupAggregate`` (``attrs``) over the exchange by its keys, as the job runs it on
    keyed state, in place of Spark's aggregate of the collected rows (its Python ``Calc``s
    above, its local aggregate below) or of its grouped-aggregate pandas UDF."""
    aggregates = ("PythonGroupAggregate", "GlobalGroupAggregate", "GroupAggregate")

    def aggregate_at(n: PlanNode) -> PlanNode | None:
        while n.name in ("Calc", "PythonCalc") and len(n.inputs) == 1 \
                and any("pythonUDF" in a for a in n.attrs):
            n = n.inputs[0]
        return n if n.name in aggregates and n.inputs else None

    def rewrite(n: PlanNode) -> PlanNode:
        found = aggregate_at(n)
        if found is None:
            n.inputs = [rewrite(child) for child in n.inputs]
            return n
        exchange = found.inputs[0]
        while exchange.name == "Sort" and exchange.inputs:
            exchange = exchange.inputs[0]
        if exchange.inputs and exchange.inputs[0].name == "LocalGroupAggregate":
            exchange.inputs = exchange.inputs[0].inputs
        return PlanNode("PythonGroupAggregate", attrs, [exchange], n.fields, n.changelog)

    return rewrite(node)


def as_table_aggregate_ast(node: PlanNode, function: str, keys: list[str],
                           arguments: list[str]) -> PlanNode:
    """A ``flat_aggregate``'s logical plan as Flink's: one ``LogicalTableAggregate`` of the
    function over its input, in place of the array aggregate and the unnest of it that the
    query is written as here (left as it is if its shape is not that)."""
    def unnested(n: PlanNode) -> bool:
        return n.name == "LogicalTableScan" and any("EXPLODE(" in a for a in n.attrs)

    def rewrite(n: PlanNode) -> PlanNode:
        join = n.inputs[0] if n.name == "LogicalProject" and len(n.inputs) == 1 else None
        if join is None or join.name != "LogicalJoin" or len(join.inputs) != 2 \
                or not unnested(join.inputs[1]) or not join.inputs[0].inputs:
            n.inputs = [rewrite(child) for child in n.inputs]
            return n
        below = join.inputs[0].inputs[0]  # under the project of the array aggregate
        if below.name == "LogicalAggregate" and below.inputs and below.inputs[0].inputs:
            below = below.inputs[0].inputs[0]  # under the aggregate's project of its keys
        names = [name for _, name in below.fields]
        if not set(keys + arguments) <= set(names):
            return n
        group = ", ".join(str(names.index(k)) for k in keys)
        call = f"{function}({', '.join(f'${names.index(a)}' for a in arguments)})"
        return PlanNode("LogicalTableAggregate", [f"group=[{{{group}}}]",
                                                  f"tableAggregate=[[{call}]]"], [below], n.fields)

    return rewrite(node)


# -- the changelog modes (STREAMING) ------------------------------------------------------------
_UPDATING = {"GroupAggregate", "GlobalGroupAggregate", "Rank"}
_APPENDING = {"WindowAggregate", "LocalWindowAggregate", "GlobalWindowAggregate",
              "GroupWindowAggregate", "OverAggregate", "TableSourceScan", "Values"}


def _changelog_modes(node: PlanNode) -> str:
    """Each node's changelog mode: a source is insert-only, a group aggregate (a Top-N, a
    regular join of an updating input...) updates, a window aggregate inserts again."""
    modes = [_changelog_modes(child) for child in node.inputs]
    if node.name in _UPDATING and not node.name.startswith("Local"):
        node.changelog = _UPDATES
    elif node.name in _APPENDING or node.name.startswith("Local"):
        node.changelog = _INSERT_ONLY
    else:
        node.changelog = _UPDATES if _UPDATES in modes else _INSERT_ONLY
    return node.changelog


# -- the abstract syntax tree -------------------------------------------------------------------
_OPERATORS: dict[type, str] = {
    exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.EQ: "=", exp.NEQ: "<>",
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "MOD", exp.And: "AND",
    exp.Or: "OR", exp.Like: "LIKE", exp.DPipe: "||",
}
_JOIN_KINDS = {"": "inner", "INNER": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full",
               "CROSS": "inner"}


class AstBuilder:
    """Flink's logical plan (Calcite's RelNodes as Flink prints them) of a parsed query;
    ``tables`` are the columns of each table or view it reads, by name; ``python_aggregates``
    the names of the Python aggregate functions the query may call."""

    def __init__(self, tables: Mapping[str, Sequence[str]],
                 watermarks: Mapping[str, tuple[str, str]] | None = None,
                 python_aggregates: Collection[str] = ()) -> None:
        self.tables = {k.lower(): list(v) for k, v in tables.items()}
        #: STREAMING: table -> (rowtime, watermark expression) of the tables with a watermark
        self.watermarks = {k.lower(): v for k, v in (watermarks or {}).items()}
        self.python_aggregates = {n.lower() for n in python_aggregates}

    def sink(self, table: str, columns: Sequence[str], query: exp.Expr) -> PlanNode:
        """``INSERT INTO table``: LogicalSink over the query."""
        rel = self.rel(query)
        names = list(columns) or [n for _, n in rel.fields]
        return PlanNode("LogicalSink", [f"table=[default_catalog.default_database.{table}]",
                                        f"fields=[{', '.join(names)}]"], [rel], rel.fields)

    def rel(self, query: exp.Expr) -> PlanNode:
        """The logical plan of a query expression."""
        if isinstance(query, exp.Subquery):
            return self._aliased(self.rel(query.this), query.alias)
        if isinstance(query, exp.Union):
            left, right = self.rel(query.left), self.rel(query.right)
            all_ = "false" if query.args.get("distinct") else "true"
            return PlanNode("LogicalUnion", [f"all=[{all_}]"], [left, right], left.fields)
        if isinstance(query, (exp.Intersect, exp.Except)):
            name = "LogicalIntersect" if isinstance(query, exp.Intersect) else "LogicalMinus"
            left, right = self.rel(query.left), self.rel(query.right)
            return PlanNode(name, ["all=[false]"], [left, right], left.fields)
        if isinstance(query, exp.Values):
            return self._values(query)
        if isinstance(query, exp.Select):
            return self._select(query)
        raise FlinkSqlError(f"EXPLAIN of {query.sql(dialect='spark')[:60]} is not supported")

    def _values(self, values: exp.Values) -> PlanNode:
        tuples = ", ".join("{ " + ", ".join(self.rex(v, []) for v in row.expressions) + " }"
                           for row in values.expressions if isinstance(row, exp.Tuple))
        alias = values.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else [
            f"EXPR${i}" for i in range(len(values.expressions[0].expressions))]
        return PlanNode("LogicalValues", [f"tuples=[[{tuples}]]"], [],
                        [(values.alias, n) for n in names])

    def _select(self, select: exp.Select) -> PlanNode:
        node = self._from(select)
        where = select.args.get("where")
        if where is not None:
            node = PlanNode("LogicalFilter", [f"condition=[{self.rex(where.this, node.fields)}]"],
                            [node], node.fields)
        if _aggregates(select, self.python_aggregates):
            node = self._aggregate(select, node)
        else:
            node = self._project(select.expressions, node)
        if select.args.get("distinct"):
            keys = ", ".join(str(i) for i in range(len(node.fields)))
            node = PlanNode("LogicalAggregate", [f"group=[{{{keys}}}]"], [node], node.fields)
        return self._sort(select, node)

    def _from(self, select: exp.Select) -> PlanNode:
        from_ = select.args.get("from_")
        if from_ is None:
            return PlanNode("LogicalValues", ["tuples=[[{ 0 }]]"], [], [("", "ZERO")])
        node = self._source(from_.this)
        match = select.args.get("match")
        if match is not None:
            attrs, outputs = logical_match(match, [n for _, n in node.fields],
                                           lambda e: self.rex(e, []))
            alias = match.args.get("alias")
            node = PlanNode("LogicalMatch", attrs, [node],
                            [(alias.name if alias is not None else "", n) for n in outputs])
        for join in select.args.get("joins") or []:
            right = self._source(join.this)
            fields = node.fields + right.fields
            on = join.args.get("on")
            condition = self.rex(on, fields) if on is not None else "true"
            kind = _JOIN_KINDS.get((join.side or join.kind or "").upper(), "inner")
            node = PlanNode("LogicalJoin", [f"condition=[{condition}]", f"joinType=[{kind}]"],
                            [node, right], fields)
        return node

    def _source(self, source: exp.Expr) -> PlanNode:
        if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
            name = ".".join(p.name for p in source.parts)
            columns = self.tables.get(name.lower(), [])
            qualifier = source.alias or source.name
            scan = PlanNode("LogicalTableScan", [f"table=[[{_PATH}, {source.name}]]"], [],
                            [(qualifier, c) for c in columns])
            watermark = self.watermarks.get(name.lower())
            if watermark is not None:
                return PlanNode("LogicalWatermarkAssigner", [f"rowtime=[{watermark[0]}]",
                                                             f"watermark=[{watermark[1]}]"],
                                [scan], scan.fields)
            return scan
        if isinstance(source, exp.Table) and isinstance(source.this, exp.Anonymous):
            return self._window_function(source)
        if isinstance(source, exp.Subquery):
            return self.rel(source)
        if isinstance(source, exp.Lateral):
            return PlanNode("LogicalTableFunctionScan",
                            [f"invocation=[{source.this.sql(dialect='spark')}]"])
        return PlanNode("LogicalTableScan", [f"table=[[{source.sql(dialect='spark')}]]"])

    def _window_function(self, source: exp.Table) -> PlanNode:
        """``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))``."""
        call = source.this.expressions[0] if source.this.expressions else source.this
        data = next((a for a in call.expressions if isinstance(a, TableArgument)), None)
        inner = self._source(data.this) if data is not None else PlanNode("LogicalValues")
        args = []
        for arg in call.expressions:
            if isinstance(arg, TableArgument):
                args.append("TABLE(#0)")
            elif isinstance(arg, Descriptor):
                args.append(f"DESCRIPTOR({', '.join(e.name for e in arg.expressions)})")
            else:
                args.append(arg.sql(dialect="spark"))
        fields = [(source.alias, n) for _, n in inner.fields] + [
            (source.alias, n) for n in ("window_start", "window_end", "window_time")]
        return PlanNode("LogicalTableFunctionScan",
                        [f"invocation=[{call.name.upper()}({', '.join(args)})]"], [inner], fields)

    def _project(self, projections: list[exp.Expr], node: PlanNode) -> PlanNode:
        items: list[str] = []
        fields: list[tuple[str, str]] = []
        for i, p in enumerate(projections):
            if isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star):
                qualifier = p.table if isinstance(p, exp.Column) else ""
                for j, (q, n) in enumerate(node.fields):
                    if not qualifier or q.lower() == qualifier.lower():
                        items.append(f"{n}=[${j}]")
                        fields.append(("", n))
                continue
            name = output_name(p, i)
            items.append(f"{name}=[{self.rex(p.unalias(), node.fields)}]")
            fields.append(("", name))
        return PlanNode("LogicalProject", items, [node], fields)

    def _aggregate(self, select: exp.Select, node: PlanNode) -> PlanNode:
        """LogicalProject (keys, then the aggregates' arguments) under LogicalAggregate, then
        HAVING and the SELECT list over the aggregate's fields."""
        group = select.args.get("group")
        keys = list(group.expressions) if group is not None else []
        calls = _aggregate_calls(select, self.python_aggregates)
        args: list[exp.Expr] = []
        for call in calls:
            args += [a for a in _call_args(call) if not any(a == x for x in keys + args)]
        inputs = keys + args
        pre = PlanNode("LogicalProject",
                       [f"{_name(e, i)}=[{self.rex(e, node.fields)}]" for i, e in enumerate(inputs)],
                       [node], [("", _name(e, i)) for i, e in enumerate(inputs)])
        names = [_name(k, i) for i, k in enumerate(keys)]
        items = []
        for i, call in enumerate(calls):
            alias = next((output_name(p, j) for j, p in enumerate(select.expressions)
                          if p.unalias() == call), f"EXPR${len(keys) + i}")
            names.append(alias)
            rendered = [f"${next(j for j, x in enumerate(inputs) if x == a)}"
                        for a in _call_args(call)]
            distinct = "DISTINCT " if isinstance(call.this, exp.Distinct) else ""
            items.append(f"{alias}=[{_agg_name(call)}({distinct}{', '.join(rendered)})]")
        group_set = "{" + ", ".join(str(i) for i in range(len(keys))) + "}"
        agg = PlanNode("LogicalAggregate", [f"group=[{group_set}]", *items], [pre],
                       [("", n) for n in names])
        aliases = {c.sql(): f"${len(keys) + i}" for i, c in enumerate(calls)}
        aliases.update({k.sql(): f"${i}" for i, k in enumerate(keys)})
        having = select.args.get("having")
        if having is not None:
            agg = PlanNode("LogicalFilter",
                           [f"condition=[{self.rex(having.this, agg.fields, aliases)}]"],
                           [agg], agg.fields)
        top = list(select.expressions)
        if [output_name(p, i) for i, p in enumerate(top)] == names and all(
                p.unalias().sql() in aliases for p in top):
            return agg
        items = [f"{output_name(p, i)}=[{self.rex(p.unalias(), agg.fields, aliases)}]"
                 for i, p in enumerate(top)]
        return PlanNode("LogicalProject", items, [agg],
                        [("", output_name(p, i)) for i, p in enumerate(top)])

    def _sort(self, select: exp.Select, node: PlanNode) -> PlanNode:
        order, limit = select.args.get("order"), select.args.get("limit")
        offset = select.args.get("offset")
        if order is None and limit is None and offset is None:
            return node
        attrs = []
        for i, o in enumerate(order.expressions if order is not None else []):
            attrs.append(f"sort{i}=[{self.rex(o.this, node.fields)}]")
            attrs.append(f"dir{i}=[{'DESC-nulls-last' if o.args.get('desc') else 'ASC'}]")
        if offset is not None:
            attrs.append(f"offset=[{offset.expression.sql()}]")
        if limit is not None:
            attrs.append(f"fetch=[{limit.expression.sql()}]")
        return PlanNode("LogicalSort", attrs, [node], node.fields)

    def _aliased(self, node: PlanNode, alias: str) -> PlanNode:
        if alias:
            node.fields = [(alias, n) for _, n in node.fields]
        return node

    # -- expressions (Flink's RexNode text: ``>($1, 1)``, ``SUM($1)``) ----------------------
    def rex(self, node: exp.Expr, fields: list[tuple[str, str]],
            aliases: Mapping[str, str] | None = None) -> str:
        """An expression as Flink prints it in a logical plan, columns as ``$i``."""
        if aliases and node.sql() in aliases:
            return aliases[node.sql()]
        if isinstance(node, exp.Column):
            return _field_ref(node, fields)
        if isinstance(node, exp.Paren):
            return self.rex(node.this, fields, aliases)
        if isinstance(node, exp.Literal):
            return f"_UTF-16LE'{node.this}'" if node.is_string else str(node.this)
        operator = _OPERATORS.get(type(node))
        if operator is not None and isinstance(node, exp.Binary):
            left = self.rex(node.left, fields, aliases)
            return f"{operator}({left}, {self.rex(node.right, fields, aliases)})"
        if isinstance(node, exp.Not) and isinstance(node.this, exp.Is):
            return f"IS NOT NULL({self.rex(node.this.this, fields, aliases)})"
        if isinstance(node, exp.Not):
            return f"NOT({self.rex(node.this, fields, aliases)})"
        if isinstance(node, exp.Is):
            return f"IS NULL({self.rex(node.this, fields, aliases)})"
        if isinstance(node, exp.Cast):
            return f"CAST({self.rex(node.this, fields, aliases)}):{node.to.sql().upper()}"
        if isinstance(node, exp.Window) or not isinstance(node, exp.Func):
            return node.sql(dialect=Flink)  # (Flink's own calls too: JSON_VALUE(...))
        args = [self.rex(a, fields, aliases) for a in _func_args(node)]
        return f"{_func_name(node)}({', '.join(args)})"


_WINDOW_PARAMS = {
    "TUMBLE": ("size",), "HOP": ("slide", "size"), "CUMULATE": ("step", "max_size"),
    "SESSION": ("gap",),
}


def window_functions(query: exp.Expr) -> list[str]:
    """The window table-valued functions ``query`` calls, as Flink's WindowTableFunction
    prints them: ``TUMBLE(time_col=[ts], size=[10 s])``."""
    out = []
    for table in query.find_all(exp.Table):
        call = table.this
        if not (isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE"
                and call.expressions and isinstance(call.expressions[0], exp.Anonymous)):
            continue
        inner = call.expressions[0]
        name = inner.name.upper()
        timecol = next((a for a in inner.expressions if isinstance(a, Descriptor)), None)
        durations = [a for a in inner.expressions if isinstance(a, exp.Interval)]
        attrs = [f"time_col=[{timecol.expressions[0].name if timecol else '?'}]"]
        for param, value in zip(_WINDOW_PARAMS.get(name, ()), durations):
            attrs.append(f"{param}=[{_duration(value)}]")
        out.append(f"{name}({', '.join(attrs)})")
    return out


def _duration(interval: exp.Interval) -> str:
    unit = (interval.text("unit") or "SECOND").upper().rstrip("S")
    short = {"MILLISECOND": "ms", "SECOND": "s", "MINUTE": "min", "HOUR": "h", "DAY": "d"}
    return f"{interval.this.this if interval.this is not None else '?'} {short.get(unit, unit)}"


def _field_ref(column: exp.Column, fields: list[tuple[str, str]]) -> str:
    for i, (qualifier, name) in enumerate(fields):
        if name.lower() == column.name.lower() and (
                not column.table or qualifier.lower() == column.table.lower()):
            return f"${i}"
    return column.sql(dialect="spark")


def _aggregates(select: exp.Select, python: Collection[str] = ()) -> bool:
    return select.args.get("group") is not None or bool(_aggregate_calls(select, python))


def _aggregate_calls(select: exp.Select, python: Collection[str] = ()) -> list[exp.Func]:
    """The aggregate calls of a SELECT list and HAVING (built-in ones, and the calls of the
    Python aggregate functions named ``python``), not those of OVER windows, in order, each
    once."""
    calls: list[exp.Func] = []
    parts = [*select.expressions, *([select.args["having"]] if select.args.get("having") else [])]
    for part in parts:
        for call in part.find_all(exp.AggFunc, exp.Anonymous):
            if isinstance(call, exp.Anonymous) and call.name.lower() not in python:
                continue
            if call.find_ancestor(exp.Window, exp.Select) is not None and isinstance(
                    call.find_ancestor(exp.Window, exp.Select), exp.Window):
                continue
            if call.find_ancestor(exp.Select) is select and not any(call == c for c in calls):
                calls.append(call)
    return calls


def _call_args(call: exp.Func) -> list[exp.Expr]:
    args = [a.this if isinstance(a, exp.Distinct) else a for a in _func_args(call)]
    flat: list[exp.Expr] = []
    for a in args:
        flat += list(a.expressions) if isinstance(a, exp.Distinct) else [a]
    return [a for a in flat if not isinstance(a, (exp.Star, exp.Order))]


def _func_args(node: exp.Func) -> list[exp.Expr]:
    args: list[exp.Expr] = []
    for key in node.arg_types:
        value = node.args.get(key)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, exp.Expr):
                args.append(v)
    return args


def _func_name(node: exp.Func) -> str:
    return node.name.upper() if isinstance(node, exp.Anonymous) else node.sql_name().upper()


def _agg_name(call: exp.Func) -> str:
    if isinstance(call, exp.Anonymous):  # a Python aggregate function, named as it was called
        return call.name
    if isinstance(call, exp.Avg):
        return "AVG"
    if isinstance(call, (FlinkJsonObjectAgg, FlinkJsonArrayAgg)):  # Flink's names say ON NULL
        return f"{call.sql_name()}_{call.args['on_null']}_ON_NULL"
    return _func_name(call)


def _name(node: exp.Expr, i: int) -> str:
    return node.name if isinstance(node, exp.Column) else f"$f{i}"

