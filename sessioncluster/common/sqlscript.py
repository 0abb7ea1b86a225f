"""A SQL script split into its statements, as Flink's SQL client splits one: at each ``;``
outside quotes, backticks, comments and an ``EXECUTE STATEMENT SET BEGIN ... END`` block
(``BEGIN STATEMENT SET;`` ... ``END;`` are statements of their own, as in Flink's SQL client).

Lexing only (no parsing), so that the client can split a ``%%flink_sql`` cell without the planner.
"""

from __future__ import annotations

import re

#: Flink's SQL client option: the rows a result keeps (here: a streaming SELECT's result
#: buffer or materialised table on the JobManager; a cell's ``--max-rows``)
MAX_TABLE_RESULT_ROWS = "sql-client.execution.max-table-result.rows"
#: Flink's SQL client option: how a streaming result is shown (``table``: the JobManager
#: materialises an updating query's result, bounded by the option above; ``changelog``: the
#: newest changes are kept)
RESULT_MODE = "sql-client.execution.result-mode"
#: the keys that say how a SELECT's result reaches its client: a request's own, never a session's
CLIENT_RESULT_KEYS = frozenset({RESULT_MODE, MAX_TABLE_RESULT_ROWS})

_TOKEN = re.compile(r"""
    (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<quoted>'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`)
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<semicolon>;)
  | (?P<other>.)
""", re.S | re.X)


class UnclosedBlockError(ValueError):
    """A script's ``EXECUTE STATEMENT SET BEGIN`` has no ``END``."""


def statement_spans(script: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of each statement of ``script`` (its ``;`` excluded; empty
    statements and ones of comments only left out); raises :class:`UnclosedBlockError`."""
    spans: list[tuple[int, int]] = []
    start, in_block, case_depth = 0, False, 0
    words: list[str] = []  # the statement's first words
    for m in _TOKEN.finditer(script):
        kind = m.lastgroup
        if kind == "word":
            word = m.group().upper()
            if len(words) < 8:
                words.append(word)
            if not in_block and word == "BEGIN" and words[0] in ("EXECUTE", "EXPLAIN") \
                    and words[-3:] == ["STATEMENT", "SET", "BEGIN"]:  # EXPLAIN [details] too
                in_block = True
            elif in_block and word == "CASE":
                case_depth += 1
            elif in_block and word == "END":
                if case_depth:
                    case_depth -= 1
                else:
                    in_block = False
        elif kind == "semicolon" and not in_block:
            spans.append((start, m.start()))
            start, words = m.end(), []
    if in_block:
        raise UnclosedBlockError("EXECUTE STATEMENT SET BEGIN without its END")
    spans.append((start, len(script)))
    return [(a, b) for a, b in spans if _has_code(script[a:b])]


def split_statements(script: str) -> list[str]:
    """The statements of ``script``, without their ``;`` and surrounding blanks; comments stay in
    the statement they are in."""
    statements: list[str] = []
    open_set: list[str] | None = None  # BEGIN STATEMENT SET; ... END; travels as one text
    for a, b in statement_spans(script):
        text = script[a:b].strip()
        words = text.upper().split()
        if words == ["BEGIN", "STATEMENT", "SET"]:
            open_set = [text]
        elif open_set is not None:
            open_set.append(text)
            if words == ["END"]:
                statements.append(";\n".join(open_set))
                open_set = None
        else:
            statements.append(text)
    if open_set is not None:
        statements.append(";\n".join(open_set))  # the planner says what is missing
    return statements


def _has_code(statement: str) -> bool:
    """True unless ``statement`` is only blanks and comments."""
    return any(m.lastgroup != "comment" and not m.group().isspace()
               for m in _TOKEN.finditer(statement))


def leading_words(statement: str, count: int = 1) -> list[str]:
    """The first ``count`` words of ``statement`` (comments skipped), upper-cased: what kind of
    statement it is (``["INSERT"]``), without parsing it."""
    words: list[str] = []
    for m in _TOKEN.finditer(statement):
        if m.lastgroup == "word":
            words.append(m.group().upper())
            if len(words) == count:
                break
        elif m.lastgroup != "comment" and not m.group().isspace():
            break
    return words


def as_statement_set(statements: list[str]) -> list[str]:
    """``statements`` with their ``INSERT INTO`` statements as one ``EXECUTE STATEMENT SET``
    (Flink's statement set: one job), in the place of the last of them; the others unchanged,
    in order. Fewer than two INSERTs: unchanged."""
    inserts = [i for i, s in enumerate(statements) if leading_words(s) == ["INSERT"]]
    if len(inserts) < 2:
        return list(statements)
    block = "EXECUTE STATEMENT SET\nBEGIN\n" + "".join(
        f"{statements[i]};\n" for i in inserts) + "END"
    return [block if i == inserts[-1] else s for i, s in enumerate(statements)
            if i not in inserts[:-1]]
