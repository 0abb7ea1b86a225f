"""A SQL script split into its statements, as Flink's SQL client splits one: at each ``;``
outside quotes, backticks, comments and an ``EXECUTE STATEMENT SET BEGIN ... END`` block.

Lexing only (no parsing), so that the client can split a ``%%flink_sql`` cell without the planner.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"""
    (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<quoted>'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`)
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<semicolon>;)
  | (?P<other>.)
""", re.S | re.X)


def split_statements(script: str) -> list[str]:
    """The statements of ``script``, without their ``;`` and surrounding blanks; comments stay in
    the statement they are in. An unclosed quote or comment leaves the rest as one statement."""
    statements: list[str] = []
    start, depth = 0, 0
    words: list[str] = []  # the current statement's words so far (the first three count)
    for m in _TOKEN.finditer(script):
        kind = m.lastgroup
        if kind == "word":
            word = m.group().upper()
            # BEGIN opens a block at a statement's start or after EXECUTE STATEMENT SET
            if word == "BEGIN" and (not words or words[:3] == ["EXECUTE", "STATEMENT", "SET"]):
                depth += 1
            elif word == "END" and depth:
                depth -= 1
            words.append(word)
        elif kind == "semicolon" and depth == 0:
            statements.append(script[start:m.start()])
            start, words = m.end(), []
    statements.append(script[start:])
    return [s.strip() for s in statements if _has_code(s)]


def _has_code(statement: str) -> bool:
    """True unless ``statement`` is only blanks and comments."""
    return any(m.lastgroup != "comment" and not m.group().isspace()
               for m in _TOKEN.finditer(statement))
