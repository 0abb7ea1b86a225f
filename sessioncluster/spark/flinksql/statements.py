"""Flink SQL scripts split into statements, each read into a typed statement.

``parse_statements(text)`` tokenizes the script once with the ``Flink`` dialect's tokenizer, splits
it at semicolons (not inside strings, comments or ``EXECUTE STATEMENT SET BEGIN ... END``), and
reads each statement: DDL, DML and queries with sqlglot's parser in the ``Flink`` dialect, the
SQL client's own statements (``SET``, ``SHOW``, ``STOP JOB``, ...) from their tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from sessioncluster.common.sqlscript import UnclosedBlockError, statement_spans
from sessioncluster.spark.flinksql.alterstatements import (
    AlterFunction,
    AlterTable,
    AlterView,
    parse_alter,
)
from sessioncluster.spark.flinksql.ctas import CreateTableAs, create_table_as, replace_only
from sessioncluster.spark.flinksql.dialect import Flink, FlinkType
from sessioncluster.spark.flinksql.model import CatalogTable, Column, FlinkSqlError, WatermarkSpec


@dataclass(slots=True)
class CreateTable:
    """``CREATE [TEMPORARY] TABLE [IF NOT EXISTS] t (...) WITH (...)``."""

    table: CatalogTable
    if_not_exists: bool = False


@dataclass(slots=True)
class CreateView:
    """``CREATE [TEMPORARY] VIEW [IF NOT EXISTS] v [(cols)] AS query``."""

    name: str
    query: exp.Expr
    columns: list[str] = field(default_factory=list)
    temporary: bool = False
    if_not_exists: bool = False


@dataclass(slots=True)
class CreateFunction:
    """``CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] f AS 'module.name' [LANGUAGE l]``."""

    name: str
    class_name: str
    language: str = "JAVA"
    temporary: bool = False
    system: bool = False
    if_not_exists: bool = False


@dataclass(slots=True)
class Drop:
    """``DROP [TEMPORARY [SYSTEM]] TABLE|VIEW|FUNCTION [IF EXISTS] name``."""

    kind: str
    name: str
    if_exists: bool = False
    temporary: bool = False
    #: ``DROP TEMPORARY SYSTEM FUNCTION``
    system: bool = False


@dataclass(slots=True)
class Show:
    """``SHOW TABLES|VIEWS|FUNCTIONS|JOBS|CATALOGS|DATABASES|...``; ``kind`` upper case, e.g.
    ``TABLES`` or ``CREATE TABLE`` (then ``name`` is the table). ``SHOW [USER] FUNCTIONS
    [FROM|IN db] [NOT] LIKE|ILIKE 'pattern'``: ``name`` the database, ``like`` the pattern."""

    kind: str
    name: str | None = None
    like: str | None = None
    #: ILIKE: the pattern ignores case
    ilike: bool = False
    #: NOT LIKE / NOT ILIKE
    not_like: bool = False


@dataclass(slots=True)
class Use:
    """``USE CATALOG c``, ``USE [c.]d``: the session has Flink's one default catalog and
    database."""

    catalog: str | None = None
    database: str | None = None


@dataclass(slots=True)
class Describe:
    """``DESCRIBE|DESC [EXTENDED] t``."""

    name: str


@dataclass(slots=True)
class Set:
    """``SET 'k' = 'v'``; ``SET`` alone (key None) lists the configuration."""

    key: str | None = None
    value: str | None = None


@dataclass(slots=True)
class Reset:
    """``RESET ['k']``; key None resets every key."""

    key: str | None = None


@dataclass(slots=True)
class StopJob:
    """``STOP JOB '<id>' [WITH SAVEPOINT] [WITH DRAIN]``."""

    job_id: str
    with_savepoint: bool = False
    with_drain: bool = False


@dataclass(slots=True)
class Insert:
    """``INSERT INTO|OVERWRITE t [PARTITION (...)] [(cols)] query``."""

    target: str
    query: exp.Expr
    overwrite: bool = False
    columns: list[str] = field(default_factory=list)
    partition: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class StatementSet:
    """``EXECUTE STATEMENT SET BEGIN ...; END`` or ``BEGIN STATEMENT SET; ...; END;``: inserts
    run as one job."""

    inserts: list[Insert]


@dataclass(slots=True)
class Query:
    """A query (``SELECT``, ``WITH``, ``VALUES``, set operations): its sqlglot AST."""

    ast: exp.Expr


@dataclass(slots=True)
class Explain:
    """``EXPLAIN [PLAN FOR | detail, ...] statement``."""

    statement: "Statement"
    #: the ExplainDetails asked for (``ESTIMATED_COST``, ``CHANGELOG_MODE``...), upper-case
    details: tuple[str, ...] = ()


Statement = Union[
    CreateTable, CreateView, CreateFunction, Drop, Show, Use, Describe, Explain, Set, Reset, StopJob,
    Insert, StatementSet, Query, AlterTable, AlterView, AlterFunction, CreateTableAs,
]


def planned_queries(statement: Statement) -> list[exp.Expr]:
    """The queries a statement plans: a query's own, an INSERT's, a statement set's, those of
    the statement an EXPLAIN explains; none for another statement."""
    if isinstance(statement, Explain):
        return planned_queries(statement.statement)
    if isinstance(statement, StatementSet):
        return [i.query for i in statement.inserts]
    if isinstance(statement, Insert):
        return [statement.query]
    return [statement.ast] if isinstance(statement, Query) else []


def parse_statements(text: str) -> list[Statement]:
    """The statements of a Flink SQL script, in order; FlinkSqlError at the first bad one."""
    script = _Script(text)
    statements: list[Statement] = []
    open_set: list[Insert] | None = None
    for tokens in script.split():
        words = [t.text.upper() for t in tokens[:3]]
        if words == ["BEGIN", "STATEMENT", "SET"] and len(tokens) == 3:
            open_set = []
            continue
        if open_set is not None and len(tokens) == 1 and words == ["END"]:
            statements.append(StatementSet(open_set))
            open_set = None
            continue
        statement = script.statement(tokens)
        if open_set is None:
            statements.append(statement)
        elif isinstance(statement, Insert):
            open_set.append(statement)
        else:
            raise script.error(tokens[0], "Only INSERT statements are allowed in a STATEMENT SET")
    if open_set is not None:
        raise FlinkSqlError("SQL parse failed. BEGIN STATEMENT SET without its END.")
    return statements


def parse_statement(text: str) -> Statement:
    """The one statement of ``text`` (a trailing semicolon allowed)."""
    statements = parse_statements(text)
    if len(statements) != 1:
        raise FlinkSqlError(f"Expected one statement, got {len(statements)}")
    return statements[0]


class _Script:
    """A script's text and tokens; reads statements and words errors with their positions."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.dialect = Flink()
        try:
            self.tokens = self.dialect.tokenize(text)
        except TokenError as e:
            raise FlinkSqlError(f"SQL parse failed. {e}") from None
        self._line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        line = max(i for i, start in enumerate(self._line_starts) if start <= offset)
        return line + 1, offset - self._line_starts[line] + 1

    def error(self, token: Token | None, message: str | None = None) -> FlinkSqlError:
        """Flink's parse error at ``token`` (None: the end of the script, Flink's
        ``SqlParserEOFException``: at the script's last character, blanks too, and without
        "SQL parse failed.")."""
        if token is None:
            line, col = self.position(max(len(self.text) - 1, 0))
            return FlinkSqlError(f'Encountered "<EOF>" at line {line}, column {col}.'
                                 + (f" {message}" if message else ""))
        line, col = self.position(token.start)
        return FlinkSqlError(f'SQL parse failed. Encountered "{token.text}" at line {line}, '
                             f"column {col}." + (f" {message}" if message else ""))

    def split(self) -> list[list[Token]]:
        """The tokens of each statement (without the semicolons; empty statements dropped)."""
        try:
            spans = statement_spans(self.text)
        except UnclosedBlockError:
            raise self.error(None, 'Was expecting "END".') from None
        return [tokens for tokens in ([t for t in self.tokens if a <= t.start < b]
                                      for a, b in spans) if tokens]

    def statement(self, tokens: list[Token]) -> Statement:
        """One statement from its tokens."""
        words = [t.text.upper() for t in tokens]
        first = words[0]
        if first == "SET":
            return self._set(tokens)
        if first == "RESET":
            return Reset(self._literal(tokens[1]) if len(tokens) > 1 else None)
        if first == "SHOW":
            return self._show(tokens)
        if first in ("DESCRIBE", "DESC"):
            rest = tokens[2:] if len(words) > 1 and words[1] in ("EXTENDED",) else tokens[1:]
            return Describe(self._name(rest))
        if first == "EXPLAIN":
            return self._explain(tokens)
        if words[:2] == ["STOP", "JOB"]:
            return self._stop_job(tokens)
        if words[:3] == ["EXECUTE", "STATEMENT", "SET"]:
            return self._statement_set(tokens)
        if first == "EXECUTE":
            return self.statement(tokens[1:])
        if first == "REPLACE":
            return replace_only(parse_statement("CREATE OR " + self._source(tokens)))
        if first == "DROP":
            return self._drop(tokens)
        if first == "CREATE" and "FUNCTION" in words[:4]:
            return self._create_function(tokens)
        if first == "USE" and words[1:2] != ["MODULES"]:
            return self._use(tokens)
        if first == "ALTER":
            return parse_alter(self, tokens, _create_table_of)
        if first in ("USE", "ANALYZE", "LOAD", "UNLOAD", "TRUNCATE", "CALL", "UPDATE",
                     "DELETE"):
            raise FlinkSqlError(f"{first} is not supported by sessioncluster "
                                f"(Flink docs: SQL / {first.capitalize()} Statements)")
        return self._sqlglot_statement(tokens)

    def _use(self, tokens: list[Token]) -> Use:
        if len(tokens) > 1 and tokens[1].text.upper() == "CATALOG":
            return Use(catalog=self._name(tokens[2:]))
        parts = self._name(tokens[1:]).split(".")
        if len(parts) > 2:
            raise self.error(tokens[1], "Was expecting USE [catalog.]database.")
        return Use(*parts) if len(parts) == 2 else Use(database=parts[0])

    def _literal(self, token: Token) -> str:
        if token.token_type == TokenType.STRING:
            return token.text
        return token.text

    def _name(self, tokens: list[Token]) -> str:
        if not tokens:
            raise self.error(None)
        return "".join(t.text if t.token_type != TokenType.DOT else "." for t in tokens)

    def _set(self, tokens: list[Token]) -> Set:
        if len(tokens) == 1:
            return Set()
        eq = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.EQ), None)
        if eq is None or eq == 1 or eq == len(tokens) - 1:
            raise self.error(tokens[-1] if eq is None else tokens[eq],
                             "Was expecting SET 'key' = 'value'.")
        key = self._literal(tokens[1]) if eq == 2 else self._source(tokens[1:eq])
        value = (self._literal(tokens[eq + 1]) if eq + 2 == len(tokens)
                 else self._source(tokens[eq + 1:]))
        return Set(key, value)

    def _source(self, tokens: list[Token]) -> str:
        return self.text[tokens[0].start : tokens[-1].end + 1]

    def _show(self, tokens: list[Token]) -> Show:
        words = [t.text.upper() for t in tokens[1:]]
        if not words:
            raise self.error(None, "Was expecting TABLES, VIEWS, FUNCTIONS, JOBS, ...")
        if words[0] == "CREATE" and len(words) > 2:
            return Show(f"CREATE {words[1]}", self._name(tokens[3:]))
        if words[:2] == ["USER", "FUNCTIONS"]:
            return self._show_functions("USER FUNCTIONS", tokens[3:])
        if words[0] == "FUNCTIONS":
            return self._show_functions("FUNCTIONS", tokens[2:])
        if words[:2] in (["CURRENT", "CATALOG"], ["CURRENT", "DATABASE"], ["FULL", "MODULES"]):
            return Show(" ".join(words[:2]))
        kinds = ("TABLES", "VIEWS", "FUNCTIONS", "JOBS", "CATALOGS", "DATABASES", "MODULES",
                 "COLUMNS", "PARTITIONS", "JARS")
        if words[0] not in kinds or len(words) > 1 and words[0] not in ("COLUMNS", "PARTITIONS"):
            raise self.error(tokens[1] if words[0] not in kinds else tokens[2])
        return Show(words[0], self._name(tokens[3:]) if len(words) > 2 else None)

    def _show_functions(self, kind: str, rest: list[Token]) -> Show:
        """``SHOW [USER] FUNCTIONS`` then ``[FROM|IN db] [NOT] LIKE|ILIKE 'pattern'``."""
        words = [t.text.upper() for t in rest]
        like = next((i for i, w in enumerate(words) if w in ("LIKE", "ILIKE")), len(rest))
        negated = like > 0 and words[like - 1] == "NOT" and like < len(rest)
        database = rest[:like - 1 if negated else like]
        if database and words[0] not in ("FROM", "IN"):
            raise self.error(database[0])
        show = Show(kind, self._name(database[1:]) if database else None)
        if like == len(rest):
            return show
        if like + 1 == len(rest) or rest[like + 1].token_type != TokenType.STRING:
            token = rest[like + 1] if like + 1 < len(rest) else None
            raise FlinkSqlError(f"{self.error(token)}\nWas expecting:\n    <QUOTED_STRING> ...\n    ")
        if like + 2 < len(rest):
            raise self.error(rest[like + 2])
        show.like, show.ilike, show.not_like = rest[like + 1].text, words[like] == "ILIKE", negated
        return show

    def _explain(self, tokens: list[Token]) -> Explain:
        rest = tokens[1:]
        words = [t.text.upper() for t in rest]
        found: list[str] = []
        if words[:2] == ["PLAN", "FOR"]:
            rest = rest[2:]
        else:
            details = {"ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE"}
            while rest and (rest[0].text.upper() in details or rest[0].token_type ==
                            TokenType.COMMA):
                if rest[0].token_type != TokenType.COMMA:
                    found.append(rest[0].text.upper())
                rest = rest[1:]
        if not rest:
            raise self.error(None)
        if [t.text.upper() for t in rest[:3]] == ["STATEMENT", "SET", "BEGIN"]:
            return Explain(self._statement_set(rest, 2), tuple(dict.fromkeys(found)))
        return Explain(self.statement(rest), tuple(dict.fromkeys(found)))

    def _stop_job(self, tokens: list[Token]) -> StopJob:
        if len(tokens) < 3 or tokens[2].token_type != TokenType.STRING:
            raise self.error(tokens[2] if len(tokens) > 2 else None, "Was expecting a job id.")
        words = [t.text.upper() for t in tokens[3:]]
        savepoint = drain = False
        while words:
            if words[:2] == ["WITH", "SAVEPOINT"]:
                savepoint = True
            elif words[:2] == ["WITH", "DRAIN"]:
                drain = True
            else:
                raise self.error(tokens[len(tokens) - len(words)])
            words = words[2:]
        return StopJob(tokens[2].text, savepoint, drain)

    def _statement_set(self, tokens: list[Token], begin: int = 3) -> StatementSet:
        """``[EXECUTE] STATEMENT SET BEGIN ...; END``: ``begin`` is BEGIN's position."""
        if tokens[-1].text.upper() != "END":
            raise self.error(None, 'Was expecting "END".')
        body = tokens[begin + 1:-1]
        inserts: list[Insert] = []
        current: list[Token] = []
        for token in [*body, None]:
            if token is None or token.token_type == TokenType.SEMICOLON:
                if current:
                    statement = self.statement(current)
                    if not isinstance(statement, Insert):
                        raise self.error(current[0], "Only INSERT statements are allowed in a "
                                         "STATEMENT SET")
                    inserts.append(statement)
                current = []
            else:
                current.append(token)
        return StatementSet(inserts)

    def _drop(self, tokens: list[Token]) -> Drop:
        words = [t.text.upper() for t in tokens]
        i = 1
        temporary = system = False
        while i < len(words) and words[i] in ("TEMPORARY", "SYSTEM"):
            temporary, system, i = True, system or words[i] == "SYSTEM", i + 1
        if i >= len(words) or words[i] not in ("TABLE", "VIEW", "FUNCTION", "CATALOG", "DATABASE"):
            raise self.error(tokens[i] if i < len(tokens) else None,
                             "Was expecting TABLE, VIEW or FUNCTION.")
        kind, i = words[i], i + 1
        if_exists = words[i : i + 2] == ["IF", "EXISTS"]
        return Drop(kind, self._name(tokens[i + 2 * if_exists :]), if_exists, temporary, system)

    def _create_function(self, tokens: list[Token]) -> CreateFunction:
        words = [t.text.upper() for t in tokens]
        temporary = "TEMPORARY" in words[:3]
        system = "SYSTEM" in words[:4]
        i = words.index("FUNCTION") + 1
        if_not_exists = words[i : i + 3] == ["IF", "NOT", "EXISTS"]
        i += 3 * if_not_exists
        try:
            as_at = words.index("AS", i)
        except ValueError:
            raise self.error(None, 'Was expecting "AS".') from None
        if as_at + 1 >= len(tokens) or tokens[as_at + 1].token_type != TokenType.STRING:
            raise self.error(tokens[as_at + 1] if as_at + 1 < len(tokens) else None,
                             "Was expecting the function's class name as a string.")
        language = "JAVA"
        rest = words[as_at + 2 :]
        if rest[:1] == ["LANGUAGE"] and len(rest) > 1:
            language, rest = rest[1], rest[2:]
        if rest and rest[:2] != ["USING", "JAR"]:
            raise self.error(tokens[len(tokens) - len(rest)])
        return CreateFunction(self._name(tokens[i:as_at]), tokens[as_at + 1].text, language,
                              temporary, system, if_not_exists)

    def _sqlglot_statement(self, tokens: list[Token]) -> Statement:
        parser = self.dialect.parser(error_level=ErrorLevel.IMMEDIATE)
        try:
            trees = parser.parse(tokens, self.text)
        except ParseError as e:
            raise self._parse_error(e, tokens) from None
        tree = trees[0] if trees else None
        if tree is None:
            raise self.error(tokens[0])
        return _statement_of(tree, self, tokens)

    def _parse_error(self, error: ParseError, tokens: list[Token]) -> FlinkSqlError:
        detail = error.errors[0] if error.errors else {}
        line, col = detail.get("line"), detail.get("col")
        for token in tokens:
            if token.line == line and token.col == col:
                if token is tokens[-1] and _wants_more(str(detail.get("description", ""))):
                    return self.error(None)  # "SELECT a FROM": Flink's "<EOF>"
                return self.error(token)
        return self.error(None if not tokens else tokens[-1] if line is None else None)


def _wants_more(description: str) -> bool:
    """A sqlglot parse error that wants what follows its token (an operand, a table name, a
    closing parenthesis), not one about the token itself."""
    return description.startswith(("Required keyword", "Expecting ")) or \
        "TokenType.SENTINEL" in description


def _statement_of(tree: exp.Expr, script: _Script, tokens: list[Token]) -> Statement:
    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind", "")).upper()
        if kind == "TABLE":
            if tree.expression is not None:
                return create_table_as(tree, lambda head: catalog_table(head, False))
            return CreateTable(catalog_table(tree), bool(tree.args.get("exists")))
        if kind == "VIEW":
            return _create_view(tree)
        raise FlinkSqlError(f"CREATE {kind} is not supported by sessioncluster "
                            "(Flink docs: SQL / CREATE Statements)")
    if isinstance(tree, exp.Insert):
        return _insert(tree)
    if isinstance(tree, exp.Query):
        return Query(tree)
    if isinstance(tree, exp.Values):
        return Query(tree)
    raise script.error(tokens[0])


def _create_table_of(text: str) -> CatalogTable:
    """The table of a ``CREATE TABLE`` statement's text (an ALTER's column definitions)."""
    statement = parse_statement(text)
    assert isinstance(statement, CreateTable)
    return statement.table


def _create_view(tree: exp.Create) -> CreateView:
    target = tree.this
    columns: list[str] = []
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    props = tree.args.get("properties")
    temporary = bool(props and any(isinstance(p, exp.TemporaryProperty)
                                   for p in props.expressions))
    return CreateView(_table_name(target), tree.expression, columns, temporary,
                      bool(tree.args.get("exists")))


def _insert(tree: exp.Insert) -> Insert:
    target = tree.this
    columns: list[str] = []
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    partition: dict[str, str] = {}
    part = target.args.get("partition") if isinstance(target, exp.Table) else None
    if part is not None:
        for eq in part.expressions:
            value = eq.expression
            partition[eq.this.name] = value.this if isinstance(value, exp.Literal) else value.sql()
        target = target.copy()
        target.set("partition", None)
    return Insert(_table_name(target), tree.expression, bool(tree.args.get("overwrite")),
                  columns, partition)


def _table_name(table: exp.Expression) -> str:
    if isinstance(table, exp.Table):
        return ".".join(p.name for p in table.parts)
    return table.name


def catalog_table(tree: exp.Create, keys_declared: bool = True) -> CatalogTable:
    """The catalog table a ``CREATE TABLE`` declares; ``keys_declared``: its watermark's and
    primary key's columns must be among its columns (a CTAS's head names the query's)."""
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise FlinkSqlError("CREATE TABLE needs a schema: (column type, ...)")
    table = CatalogTable(_table_name(schema.this), [])
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            table.columns.append(_column(item))
        elif isinstance(item, exp.WatermarkColumnConstraint):
            table.watermark = WatermarkSpec(item.this.name, _flink_sql(item.expression))
        elif isinstance(item, exp.PrimaryKey):
            table.primary_key = [e.name for e in item.expressions]
        else:
            raise FlinkSqlError(f"Unsupported table constraint: {_flink_sql(item)}")
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        if isinstance(prop, exp.TemporaryProperty):
            table.temporary = True
        elif isinstance(prop, exp.SchemaCommentProperty):
            table.comment = prop.this.this
        elif isinstance(prop, exp.PartitionedByProperty):
            table.partition_keys = [e.name for e in prop.this.expressions]
        elif isinstance(prop, exp.Property) and isinstance(prop.this, exp.Literal):
            table.options[prop.this.this] = prop.args["value"].this
        else:
            raise FlinkSqlError(f"Unsupported table property: {_flink_sql(prop)}")
    names = {c.name for c in table.columns}
    keys = ([table.watermark.rowtime] if table.watermark else []) + table.primary_key
    for key in keys if keys_declared else []:
        if key not in names:
            raise FlinkSqlError(f"Unknown column '{key}' in table '{table.name}'")
    return table


def _column(item: exp.ColumnDef) -> Column:
    kind = item.args.get("kind")
    type_text = kind.this if isinstance(kind, FlinkType) else None
    expression = comment = None
    for constraint in item.args.get("constraints") or []:
        c = constraint.args.get("kind")
        if isinstance(c, exp.ComputedColumnConstraint):
            expression = _flink_sql(c.this)
        elif isinstance(c, exp.CommentColumnConstraint):
            comment = c.this.this
        elif isinstance(c, exp.NotNullColumnConstraint) and type_text:
            type_text += " NOT NULL"
        elif isinstance(c, exp.PrimaryKeyColumnConstraint):
            continue
        else:
            raise FlinkSqlError(f"Unsupported column constraint on '{item.name}': "
                                f"{_flink_sql(c)}")
    if type_text is None and expression is None:
        raise FlinkSqlError(f"Column '{item.name}' has neither a type nor an expression")
    return Column(item.name, type_text, expression, comment)


def _flink_sql(node: exp.Expression) -> str:
    """Flink SQL text of an expression (types as written)."""
    return node.sql(dialect=Flink)
