"""The ``Flink`` sqlglot dialect: Flink SQL's grammar on top of sqlglot's Spark dialect.

What Spark's grammar lacks and Flink SQL has: ``WATERMARK FOR ts AS expr`` and
``PRIMARY KEY (..) NOT ENFORCED`` in a table's schema, table arguments (``TABLE t [PARTITION BY
k]``) and ``DESCRIPTOR(col)`` in the calls of window table-valued functions, named arguments
(``DATA => TABLE t``), and ``SESSION`` as a function name. Statements Spark has no grammar for
(``SET 'k' = 'v'``, ``STOP JOB``, ``SHOW JOBS``, ...) are recognized in ``statements.py``.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from .builtins import BUILTIN_CALLS, FlinkCollect, collect_sql
from .jsonfunctions import (
    JSON_FUNCTION_PARSERS,
    FlinkJson,
    FlinkJsonArrayAgg,
    FlinkJsonObjectAgg,
    json_array_agg_sql,
    json_object_agg_sql,
    json_sql,
)


class TableArgument(exp.Expression):
    """``TABLE t [PARTITION BY k, ...]``: a table passed to a table-valued function."""

    arg_types = {"this": True, "partition_by": False}


class Descriptor(exp.Expression):
    """``DESCRIPTOR(col, ...)``: the columns a window function reads its time from."""

    arg_types = {"expressions": True}


def _parse_watermark(parser: Any) -> exp.Expr:
    if not parser._match(TokenType.FOR):
        parser.raise_error("Expecting FOR after WATERMARK")
    rowtime = parser._parse_column()
    if not parser._match(TokenType.ALIAS):
        parser.raise_error("Expecting AS after WATERMARK FOR <column>")
    return parser.expression(
        exp.WatermarkColumnConstraint(this=rowtime, expression=parser._parse_disjunction())
    )


def _parse_descriptor(parser: Any) -> exp.Expr:
    return parser.expression(Descriptor(expressions=parser._parse_csv(parser._parse_column)))


class FlinkType(exp.Expression):
    """A Flink SQL type as written (``TIMESTAMP(3)``, ``ROW<a INT, b STRING>``), kept as text:
    ``datatypes.data_type`` reads it, the planner turns it into Spark's type."""

    arg_types = {"this": True}


#: the words a Flink SQL type starts with
TYPE_NAMES = frozenset(
    "CHAR VARCHAR STRING BOOLEAN BINARY VARBINARY BYTES DECIMAL DEC NUMERIC TINYINT SMALLINT INT "
    "INTEGER BIGINT FLOAT REAL DOUBLE DATE TIME TIMESTAMP TIMESTAMP_LTZ ARRAY MULTISET MAP ROW "
    "RAW NULL VARIANT".split()
)
_OPEN = {TokenType.LT: 1, TokenType.L_PAREN: 1}
_CLOSE = {TokenType.GT: 1, TokenType.R_PAREN: 1}


class FlinkCast(exp.Expression):
    """``CAST(x AS <Flink type>)`` (``safe``: ``TRY_CAST``)."""

    arg_types = {"this": True, "to": True, "safe": False}


def _cast_parser(safe: bool) -> Any:
    def parse(parser: Any) -> exp.Expr:
        this = parser._parse_disjunction()
        if not parser._match(TokenType.ALIAS):
            parser.raise_error("Expecting AS in CAST")
        if not (parser._curr and parser._curr.text.upper() in TYPE_NAMES):
            parser.raise_error("Expecting a data type")
        return parser.expression(FlinkCast(this=this, to=parser._parse_flink_type(), safe=safe))

    return parse


def _raw_function(name: str) -> Any:
    """Keeps a call as written: its Flink semantics differ from what sqlglot would read."""
    return lambda args: exp.Anonymous(this=name, expressions=args)


#: functions the planner maps itself (their meaning differs between Flink and Spark)
RAW_FUNCTIONS = (
    "TO_TIMESTAMP", "TO_DATE", "DATE_FORMAT", "TYPEOF", "REGEXP_EXTRACT", "TIMESTAMPADD", "TIMESTAMPDIFF",
    "CHAR_LENGTH", "NOW", "LOCALTIMESTAMP", "PROCTIME", "CURRENT_WATERMARK",
    "TUMBLE", "HOP", "SESSION", "CUMULATE",
)
#: names Flink has no built-in function of, which sqlglot would read as Spark's (and reject
#: the arguments of): free for the user's own functions, as PyFlink's examples' ``split``
USER_FUNCTION_NAMES = ("SPLIT",)
#: MATCH_RECOGNIZE's navigation: ``LAST(A.price, 1)`` keeps its offset (Spark's LAST would not)
MATCH_FUNCTIONS = ("FIRST", "LAST", "PREV", "NEXT")


class FlinkParser(SparkParser):
    """Spark's parser taught Flink SQL's DDL additions and table-function arguments."""

    CONSTRAINT_PARSERS = {
        **SparkParser.CONSTRAINT_PARSERS,
        "WATERMARK": _parse_watermark,
    }
    SCHEMA_UNNAMED_CONSTRAINTS = {*SparkParser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}
    FUNCTION_PARSERS = {
        **SparkParser.FUNCTION_PARSERS,
        "DESCRIPTOR": _parse_descriptor,
        "CAST": _cast_parser(False),
        "TRY_CAST": _cast_parser(True),
        **JSON_FUNCTION_PARSERS,
    }
    FUNCTIONS = {**SparkParser.FUNCTIONS,
                 **{n: _raw_function(n)
                    for n in RAW_FUNCTIONS + USER_FUNCTION_NAMES + MATCH_FUNCTIONS + BUILTIN_CALLS},
                 "COLLECT": lambda args: FlinkCollect(this=args[0])}

    def _parse_lambda(self, alias: bool = False) -> exp.Expr | None:
        if self._curr and self._curr.token_type == TokenType.TABLE:
            return self._parse_table_argument()
        if (
            self._next
            and self._next.token_type == TokenType.FARROW
            and self._index + 2 < len(self._tokens)
            and self._tokens[self._index + 2].token_type == TokenType.TABLE
        ):
            name = self._parse_id_var()
            self._match(TokenType.FARROW)
            return self.expression(exp.Kwarg(this=name, expression=self._parse_table_argument()))
        return super()._parse_lambda(alias)

    def _parse_match_recognize(self) -> exp.MatchRecognize | None:
        self._within: exp.Expr | None = None
        self._skip_to_last()
        node = super()._parse_match_recognize()
        if node is not None and self._within is not None:
            node.set("within", self._within)
        return node

    def _skip_to_last(self) -> None:
        """Flink's ``AFTER MATCH SKIP TO x`` is ``SKIP TO LAST x``, which sqlglot's grammar has:
        the LAST put in the clause's tokens."""
        words = [t.text.upper() for t in self._tokens[self._index:self._index + 400]]
        for at in range(len(words) - 4):
            if words[at:at + 4] == ["AFTER", "MATCH", "SKIP", "TO"]:
                if words[at + 4] not in ("NEXT", "FIRST", "LAST"):
                    to = self._tokens[self._index + at + 3]
                    self._tokens.insert(self._index + at + 4, Token(
                        TokenType.VAR, "LAST", to.line, to.col, to.start, to.end))
                return

    def _match_text_seq(self, *texts: str, advance: bool = True) -> Any:
        # Flink's MATCH_RECOGNIZE has ``WITHIN <interval>`` between PATTERN (...) and DEFINE,
        # which sqlglot's grammar lacks: read there, kept in the node's "within"
        if texts == ("DEFINE",) and self._curr and self._curr.text.upper() == "WITHIN":
            self._advance()
            self._within = self._parse_bitwise()
        return super()._match_text_seq(*texts, advance=advance)

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        # a schema's types are read by Flink's grammar (CAST's too, in _parse_flink_cast)
        if schema and self._curr and self._curr.text.upper() in TYPE_NAMES:
            return self._parse_flink_type()
        return super()._parse_types(check_func, schema, allow_identifiers, with_collation)

    def _parse_flink_type(self) -> exp.Expr:
        first = self._curr
        last = first
        self._advance()
        depth = 0
        while self._curr is not None:
            kind = self._curr.token_type
            if depth == 0 and kind not in _OPEN:
                break
            depth += _OPEN.get(kind, 0) - _CLOSE.get(kind, 0)
            last = self._curr
            self._advance()
            if depth <= 0:
                break
        if first.text.upper() == "DOUBLE" and self._match_text_seq("PRECISION"):
            last = self._prev
        for words in (("WITH", "LOCAL", "TIME", "ZONE"), ("WITH", "TIME", "ZONE"),
                      ("WITHOUT", "TIME", "ZONE")):
            if self._match_text_seq(*words):
                last = self._prev
                break
        return self.expression(FlinkType(this=self.sql[first.start : last.end + 1]))

    def _parse_table_argument(self) -> exp.Expr:
        self._match(TokenType.TABLE)
        table = self._parse_table_parts()
        partition_by = None
        if self._match(TokenType.PARTITION_BY) or self._match_text_seq("PARTITION", "BY"):
            if self._match(TokenType.L_PAREN, advance=False):
                partition_by = self._parse_wrapped_csv(self._parse_column)
            else:
                partition_by = [c for c in [self._parse_column()] if c is not None]
        return self.expression(TableArgument(this=table, partition_by=partition_by))


def _table_argument_sql(gen: Any, node: TableArgument) -> str:
    keys = node.args.get("partition_by")
    partition = f" PARTITION BY ({gen.expressions(node, key='partition_by', flat=True)})"
    return f"TABLE {gen.sql(node, 'this')}" + (partition if keys else "")


def _cast_sql(gen: Any, node: FlinkCast) -> str:
    name = "TRY_CAST" if node.args.get("safe") else "CAST"
    return f"{name}({gen.sql(node, 'this')} AS {node.args['to'].this})"


class _FlinkGenerator(Spark.Generator):  # type: ignore[valid-type,misc]
    """Writes Flink SQL back (computed columns and watermarks are kept as Flink SQL text)."""

    TRANSFORMS = {
        **Spark.Generator.TRANSFORMS,
        FlinkType: lambda gen, node: node.this,
        FlinkCast: _cast_sql,
        FlinkJson: json_sql,
        FlinkJsonObjectAgg: json_object_agg_sql,
        FlinkJsonArrayAgg: json_array_agg_sql,
        FlinkCollect: collect_sql,
        TableArgument: _table_argument_sql,
        Descriptor: lambda gen, node: f"DESCRIPTOR({gen.expressions(node, flat=True)})",
    }


class Flink(Spark):
    """Flink SQL as sqlglot reads it (``read="flink"`` once this module is imported)."""

    class Tokenizer(Spark.Tokenizer):
        KEYWORDS = {**Spark.Tokenizer.KEYWORDS}
        # SESSION is a window function name in Flink, not a keyword
        KEYWORDS.pop("SESSION", None)
        KEYWORDS["MATCH_RECOGNIZE"] = TokenType.MATCH_RECOGNIZE
        # the SQL client's statements are read from their tokens (statements.py), not swallowed
        # whole as sqlglot's opaque commands
        COMMANDS: set[TokenType] = set()  # type: ignore[misc]

    Parser = FlinkParser
    Generator = _FlinkGenerator


def plan_text(expression: exp.Expression) -> str:
    """An expression as Flink's plans and messages print it: Flink SQL, identifiers unquoted."""
    def unquoted(node: exp.Expression) -> exp.Expression:
        return exp.to_identifier(node.name) if isinstance(node, exp.Identifier) else node

    return expression.transform(unquoted).sql(dialect=Flink)


def output_name(projection: exp.Expr, position: int) -> str:
    """A SELECT item's field name as Flink (Calcite) gives it: its alias, a column's name, else
    ``EXPR$<position>``."""
    if isinstance(projection, (exp.Alias, exp.Column)):
        return projection.alias_or_name
    return f"EXPR${position}"


def name_outputs(tree: exp.Expr) -> None:
    """Give every unnamed SELECT item of ``tree`` Flink's name, ``EXPR$<position>``, as an
    alias (Spark would name it after its text). Items after a ``*`` keep Spark's name: their
    position depends on the star's width."""
    for select in tree.find_all(exp.Select):
        for i, item in enumerate(list(select.expressions)):
            if isinstance(item, exp.Star) or isinstance(item, exp.Column) and item.is_star:
                break
            if not isinstance(item, (exp.Alias, exp.Column)):
                item.replace(exp.alias_(item.copy(), output_name(item, i), quoted=True))


#: Flink's window table functions
WINDOW_FUNCTIONS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")


def window_table_and_time(call: exp.Expr) -> tuple[exp.Table, str] | None:
    """The table and the time column's name (lower case) of a window table function's call
    (``TUMBLE(TABLE t, DESCRIPTOR(ts), ...)``, its arguments positional or named); None for
    another call."""
    if not (isinstance(call, exp.Anonymous) and call.name.upper() in WINDOW_FUNCTIONS):
        return None
    args = [a.expression if isinstance(a, exp.Kwarg) else a for a in call.expressions]
    table = next((a.this for a in args if isinstance(a, TableArgument)), None)
    descriptor = next((a for a in args if isinstance(a, Descriptor)), None)
    if not isinstance(table, exp.Table) or descriptor is None \
            or len(descriptor.expressions) != 1:
        return None
    return table, descriptor.expressions[0].name.lower()


def cte_names(query: exp.Expr) -> set[str]:
    """The names of the query's common table expressions."""
    return {cte.alias for cte in query.find_all(exp.CTE)}


def table_names(query: Any) -> set[str]:
    """The names of the tables a query's AST reads (CTE names included: they are no tables)."""
    return {".".join(p.name for p in t.parts) for t in query.find_all(exp.Table)
            if isinstance(t.this, exp.Identifier)}


def renamed_tables(query: Any, renames: dict[str, str]) -> Any:
    """A copy of ``query`` reading each table of ``renames`` under its Spark name (aliased to
    the name as written, so that ``t.column`` still reads it)."""
    if not renames:
        return query
    query = query.copy()
    for table in list(query.find_all(exp.Table)):
        if not isinstance(table.this, exp.Identifier):
            continue
        spark_name = renames.get(".".join(p.name for p in table.parts))
        if spark_name is None:
            continue
        alias = table.alias or table.name
        for part in ("db", "catalog"):
            table.set(part, None)
        table.set("this", exp.to_identifier(spark_name, quoted=True))
        if not isinstance(table.parent, TableArgument):  # a window TVF's TABLE t: not aliased
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
    return query
