"""``ALTER TABLE``, ``ALTER VIEW`` and ``ALTER FUNCTION`` read from their tokens.

sqlglot reads only some of Flink's ALTER forms (``RESET``, ``MODIFY``, ``WATERMARK`` become a
bare command), so the statement's form is read from the tokens of the ``Flink`` dialect's
tokenizer; a column definition is read by sqlglot's parser as the one item of a ``CREATE
TABLE``, and an expression (a watermark's) by its expression parser.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, Union

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from .dialect import Flink
from .model import CatalogTable, Column, FlinkSqlError, WatermarkSpec

#: what may follow ``ALTER TABLE t``, as Flink's parser lists it
_TABLE_ACTIONS = ("ADD", "DROP", "RESET", "SET", "MODIFY", "RENAME")


class Script(Protocol):
    """What the statement reader gives: the script's text, Flink's parse errors."""

    text: str

    def error(self, token: Token | None, message: str | None = None) -> FlinkSqlError:
        """Flink's parse error at ``token`` (None: the end of the script)."""


#: reads a ``CREATE TABLE`` statement's text into its catalog table
TableReader = Callable[[str], CatalogTable]


@dataclass(slots=True)
class PlacedColumn:
    """A column of ``ADD``/``MODIFY`` and where it goes: ``FIRST``, ``AFTER c`` or ``None``."""

    column: Column
    first: bool = False
    after: str | None = None


@dataclass(slots=True)
class SchemaChange:
    """``ADD``/``MODIFY`` of columns, a watermark, a primary key (``modify``: MODIFY)."""

    modify: bool
    columns: list[PlacedColumn] = field(default_factory=list)
    watermark: WatermarkSpec | None = None
    primary_key: list[str] | None = None
    #: ``CONSTRAINT name PRIMARY KEY ...``; None: Flink's own ``PK_<columns>``
    constraint: str | None = None


@dataclass(slots=True)
class AlterTable:
    """``ALTER TABLE [IF EXISTS] t <action>``; ``action``: ``RENAME`` (``new_name``), ``SET``
    (``options``), ``RESET`` (``keys``), ``SCHEMA`` (``schema``), ``DROP COLUMNS``
    (``keys``: the columns), ``DROP PRIMARY KEY``, ``DROP WATERMARK``, ``RENAME COLUMN``
    (``keys``: the old name, ``new_name``)."""

    name: str
    action: str
    if_exists: bool = False
    new_name: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    schema: SchemaChange | None = None


@dataclass(slots=True)
class AlterView:
    """``ALTER VIEW v RENAME TO v2`` (``new_name``) or ``ALTER VIEW v AS query`` (``query``,
    and ``query_text`` as written)."""

    name: str
    new_name: str | None = None
    query: exp.Expr | None = None
    query_text: str = ""


@dataclass(slots=True)
class AlterFunction:
    """``ALTER [TEMPORARY [SYSTEM]] FUNCTION [IF EXISTS] f AS 'module.name' [LANGUAGE l]``."""

    name: str
    class_name: str
    language: str = "JAVA"
    temporary: bool = False
    system: bool = False
    if_exists: bool = False


Alter = Union[AlterTable, AlterView, AlterFunction]


def parse_alter(script: Script, tokens: list[Token], read_table: TableReader) -> Alter:
    """The ALTER statement of ``tokens`` (its first token is ``ALTER``)."""
    words = [t.text.upper() for t in tokens]
    if words[1:2] == ["TABLE"]:
        return _Reader(script, tokens, read_table).table()
    if words[1:2] == ["VIEW"]:
        return _Reader(script, tokens, read_table).view()
    if "FUNCTION" in words[1:4]:
        return _Reader(script, tokens, read_table).function()
    if len(tokens) > 1 and words[1] in ("CATALOG", "DATABASE", "MODEL", "MATERIALIZED",
                                        "CONNECTION"):
        raise FlinkSqlError(f"ALTER {words[1]} is not supported by sessioncluster "
                            "(Flink docs: SQL / ALTER Statements)")
    expected = ("SESSION", "SYSTEM", "CATALOG", "DATABASE", "TEMPORARY", "FUNCTION",
                "MATERIALIZED", "MODEL", "CONNECTION", "TABLE", "VIEW")
    raise _expecting(script, tokens[1] if len(tokens) > 1 else None, expected)


def _expecting(script: Script, token: Token | None, words: tuple[str, ...]) -> FlinkSqlError:
    """Flink's parse error listing what it expected."""
    listed = "".join(f'    "{w}" ...\n' for w in words)
    return FlinkSqlError(f"{script.error(token)}\nWas expecting one of:\n{listed}    ")


class _Reader:
    """Reads one ALTER statement from its tokens."""

    def __init__(self, script: Script, tokens: list[Token], read_table: TableReader) -> None:
        self.script, self.tokens, self.read_table = script, tokens, read_table
        self.words = [t.text.upper() for t in tokens]
        self.i = 2

    def peek(self, offset: int = 0) -> str | None:
        i = self.i + offset
        return self.words[i] if i < len(self.words) else None

    def token(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def name(self) -> str:
        """A possibly qualified name: its last part (the one catalog and database)."""
        token = self.token()
        if token is None or token.token_type not in (TokenType.VAR, TokenType.IDENTIFIER) \
                and not token.text.isidentifier():
            raise self.script.error(token)
        parts = [token.text]
        self.i += 1
        while self.peek() == "." and self.i + 1 < len(self.tokens):
            parts.append(self.tokens[self.i + 1].text)
            self.i += 2
        return parts[-1]

    def expect(self, word: str) -> None:
        if self.peek() != word:
            raise _expecting(self.script, self.token(), (word,))
        self.i += 1

    def end(self) -> None:
        if self.i < len(self.tokens):
            raise self.script.error(self.tokens[self.i])

    def source(self, start: int, stop: int) -> str:
        """The text of tokens ``start`` to ``stop`` (exclusive) as written."""
        return self.script.text[self.tokens[start].start: self.tokens[stop - 1].end + 1]

    # -- ALTER TABLE --------------------------------------------------------------------------
    def table(self) -> AlterTable:
        if_exists = self.words[2:4] == ["IF", "EXISTS"]
        self.i += 2 * if_exists
        statement = AlterTable(self.name(), "", if_exists)
        action = self.peek()
        if action not in _TABLE_ACTIONS:
            raise _expecting(self.script, self.token(), (*_TABLE_ACTIONS, "."))
        self.i += 1
        if action == "RENAME":
            self._rename(statement)
        elif action in ("SET", "RESET"):
            statement.action = action
            items = self.parenthesized()
            if action == "SET":
                statement.options = dict(self.option(item) for item in items)
            else:
                statement.keys = [self.literal(item) for item in items]
        elif action == "DROP":
            self._drop(statement)
        else:
            statement.action = "SCHEMA"
            statement.schema = self._schema(action == "MODIFY")
        self.end()
        return statement

    def _rename(self, statement: AlterTable) -> None:
        if self.peek() == "TO":
            self.i += 1
            statement.action, statement.new_name = "RENAME", self.name()
            return
        statement.action, statement.keys = "RENAME COLUMN", [self.name()]
        self.expect("TO")
        statement.new_name = self.name()

    def _drop(self, statement: AlterTable) -> None:
        if self.peek() == "PRIMARY KEY" or self.words[self.i:self.i + 2] == ["PRIMARY", "KEY"]:
            statement.action = "DROP PRIMARY KEY"
            self.i += 1 if self.peek() == "PRIMARY KEY" else 2
        elif self.peek() == "WATERMARK":
            statement.action, self.i = "DROP WATERMARK", self.i + 1
        elif self.peek() == "(":
            statement.action = "DROP COLUMNS"
            statement.keys = [self.source(a, b) .strip("`") for a, b in self.parenthesized()]
        else:
            statement.action, statement.keys = "DROP COLUMNS", [self.name()]

    def parenthesized(self) -> list[tuple[int, int]]:
        """The comma-separated items (token ranges) of a parenthesized list at the cursor."""
        if self.peek() != "(":
            raise self.script.error(self.token(), 'Was expecting "(".')
        items: list[tuple[int, int]] = []
        depth, start = 0, self.i + 1
        for i in range(self.i, len(self.tokens)):
            kind = self.tokens[i].token_type
            depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
            if depth == 1 and kind == TokenType.COMMA or depth == 0:
                if i > start:
                    items.append((start, i))
                start = i + 1
            if depth == 0:
                self.i = i + 1
                return items
        raise self.script.error(None, 'Was expecting ")".')

    def literal(self, item: tuple[int, int]) -> str:
        start, stop = item
        token = self.tokens[start]
        if stop - start != 1 or token.token_type != TokenType.STRING:
            raise self.script.error(token, "Was expecting a quoted string.")
        return token.text

    def option(self, item: tuple[int, int]) -> tuple[str, str]:
        start, stop = item
        if stop - start != 3 or self.tokens[start + 1].token_type != TokenType.EQ:
            raise self.script.error(self.tokens[start], "Was expecting 'key' = 'value'.")
        return self.literal((start, start + 1)), self.literal((start + 2, stop))

    def _schema(self, modify: bool) -> SchemaChange:
        change = SchemaChange(modify)
        if self.peek() == "(":
            items = self.parenthesized()
        else:
            items, self.i = [(self.i, len(self.tokens))], len(self.tokens)
        after = self.i
        for start, stop in items:
            self._schema_item(change, start, stop)
        self.i = after
        return change

    def _schema_item(self, change: SchemaChange, start: int, stop: int) -> None:
        words = self.words[start:stop]
        if not words:
            raise self.script.error(None)
        if words[0] == "WATERMARK":
            if words[1:2] != ["FOR"] or "AS" not in words:
                raise self.script.error(self.tokens[start + 1] if stop > start + 1 else None)
            at = start + words.index("AS")
            change.watermark = WatermarkSpec(self.source(start + 2, at).strip("`"),
                                             _expression(self.source(at + 1, stop)))
            return
        if words[0].startswith("PRIMARY") or words[0] == "CONSTRAINT":
            if words[0] == "CONSTRAINT":
                change.constraint = self.tokens[start + 1].text
            key = next((i for i, w in enumerate(words) if w in ("KEY", "PRIMARY KEY")), None)
            if key is None:
                raise self.script.error(self.tokens[start + 1] if stop > start + 1 else None)
            self.i = start + key + 1
            change.primary_key = [self.source(a, b).strip("`") for a, b in self.parenthesized()]
            if self.words[self.i:stop] != ["NOT", "ENFORCED"]:
                raise self.script.error(self.tokens[self.i] if self.i < stop else None,
                                        'Was expecting "NOT ENFORCED".')
            return
        placed = PlacedColumn(Column("", None))
        if words[-1] == "FIRST":
            placed.first, stop = True, stop - 1
        elif len(words) > 2 and words[-2] == "AFTER":
            placed.after, stop = self.tokens[stop - 1].text, stop - 2
        table = self.read_table(f"CREATE TABLE __alter ({self.source(start, stop)})")
        placed.column = table.columns[0]
        change.columns.append(placed)


    # -- ALTER VIEW, ALTER FUNCTION ------------------------------------------------------------
    def view(self) -> AlterView:
        statement = AlterView(self.name())
        if self.peek() == "RENAME":
            self.i += 1
            self.expect("TO")
            statement.new_name = self.name()
            self.end()
            return statement
        if self.peek() != "AS" or self.i + 1 >= len(self.tokens):
            raise _expecting(self.script, self.token(), ("AS", "RENAME", "."))
        statement.query_text = self.source(self.i + 1, len(self.tokens))
        try:
            statement.query = sqlglot.parse_one(statement.query_text, read=Flink)
        except ParseError as e:
            raise FlinkSqlError(f"SQL parse failed. {e}") from None
        return statement

    def function(self) -> AlterFunction:
        temporary = "TEMPORARY" in self.words[1:3]
        system = "SYSTEM" in self.words[1:4]
        self.i = self.words.index("FUNCTION") + 1
        if_exists = self.words[self.i:self.i + 2] == ["IF", "EXISTS"]
        self.i += 2 * if_exists
        name = self.name()
        self.expect("AS")
        token = self.token()
        if token is None or token.token_type != TokenType.STRING:
            raise self.script.error(token, "Was expecting the function's class name as a "
                                    "string.")
        self.i += 1
        language = "JAVA"
        if self.peek() == "LANGUAGE" and self.i + 1 < len(self.tokens):
            language, self.i = self.words[self.i + 1], self.i + 2
        self.end()
        return AlterFunction(name, token.text, language, temporary, system, if_exists)


def _expression(text: str) -> str:
    """A Flink SQL expression as the catalog keeps it (sqlglot's Flink text)."""
    try:
        return sqlglot.parse_one(text, read=Flink).sql(dialect=Flink)
    except ParseError as e:
        raise FlinkSqlError(f"SQL parse failed. {e}") from None
