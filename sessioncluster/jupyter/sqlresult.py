"""A streaming query's result as a ``%%flink_sql`` cell shows it, in the result modes of Flink's
SQL client and Zeppelin's ``%flink.ssql``:

- ``table``: the changelog materialised (``+I``/``+U`` add a row, ``-U``/``-D`` take one away; an
  update keeps its row's place), as the SQL client's table mode and Zeppelin's ``type=update``;
- ``changelog``: the last changes with their ``op`` column, as the SQL client's changelog mode;
- ``append``: the rows added, as Zeppelin's ``type=append`` (an append-only query's);
- ``single``: the last row in an HTML template (``{0}`` its first column), as Zeppelin's
  ``type=single``.

Each keeps at most ``max_rows`` rows, the newest, and counts the ones it dropped, so that the
client's memory is bounded whatever the query's rate. Pure: no kernel, no session; the magic
feeds it what it fetches and shows :meth:`LiveResult.html`. Also here: ``{name}`` substitution of
kernel variables in a cell (:func:`substitute`).
"""

from __future__ import annotations

from collections import deque
from html import escape
from typing import Any, Iterable, Mapping, Sequence

from ..api.table.result import cell_string
from ..common.types import frozen
from .html import FONT, badge, table

MODES = ("table", "changelog", "append", "single")
DEFAULT_MAX_ROWS = 1000

Change = tuple[str, Sequence[Any]]


def _key(row: Sequence[Any]) -> Any:
    """A hashable stand-in for a row (lists, dicts and ROWs inside made tuples)."""
    return frozen(tuple(row))


class LiveResult:
    """The rows a cell shows of a streaming query, in one of :data:`MODES`."""

    def __init__(self, columns: Sequence[str], types: Sequence[str], mode: str = "table",
                 max_rows: int = DEFAULT_MAX_ROWS, template: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown result mode {mode!r}: one of {', '.join(MODES)}")
        if max_rows < 1:
            raise ValueError(f"max_rows must be at least 1, not {max_rows}")
        self.columns, self.types = list(columns), list(types)
        self.mode, self.max_rows = mode, max_rows
        self.template = template if template is not None else "{0}"
        #: rows dropped to stay within ``max_rows`` (the oldest)
        self.dropped = 0
        #: rows the job dropped unread before they reached the cell (its result buffer keeps
        #: the newest ``max_rows`` of an append-only query)
        self.dropped_by_job = 0
        #: changes applied in all
        self.changes = 0
        self._log: deque[tuple[str, tuple[Any, ...]]] = deque()
        # the materialised table: slot id -> row (None: taken away by a -U whose +U is to come)
        self._rows: dict[int, tuple[Any, ...] | None] = {}
        self._slots: dict[Any, list[int]] = {}
        self._next_slot = 0
        self._vacated: deque[int] = deque()

    # -- changes ---------------------------------------------------------------------------------
    def apply(self, changes: Iterable[Change]) -> None:
        """Apply a changelog's rows (``(op, values)``, op ``+I``, ``-U``, ``+U`` or ``-D``)."""
        for op, values in changes:
            row = tuple(values)
            self.changes += 1
            if self.mode in ("changelog", "append"):
                if self.mode == "changelog" or op in ("+I", "+U"):
                    self._log.append((op, row))
                    if len(self._log) > self.max_rows:
                        self._log.popleft()
                        self.dropped += 1
            elif op in ("+I", "+U"):
                self._add(row, reuse=op == "+U")
            else:
                self._retract(row, vacate=op == "-U")
        self._purge_vacated()

    def replace(self, rows: Iterable[Sequence[Any]]) -> None:
        """Show ``rows`` as the whole table (``table`` or ``single`` mode): a snapshot of the
        result the JobManager materialises, already within ``max_rows``."""
        if self.mode not in ("table", "single"):
            raise ValueError(f"a snapshot replaces a table, not a {self.mode} result")
        self._rows, self._slots, self._vacated = {}, {}, deque()
        self._next_slot = 0
        for row in rows:
            self._add(tuple(row), reuse=False)

    def _add(self, row: tuple[Any, ...], reuse: bool) -> None:
        slot = self._vacated.popleft() if reuse and self._vacated else None
        if slot is None:
            slot, self._next_slot = self._next_slot, self._next_slot + 1
        self._rows[slot] = row
        self._slots.setdefault(_key(row), []).append(slot)
        while len(self._rows) > self.max_rows:
            oldest = next(iter(self._rows))
            self._forget(oldest)
            self.dropped += 1

    def _retract(self, row: tuple[Any, ...], vacate: bool) -> None:
        slots = self._slots.get(_key(row))
        if not slots:
            return  # a row dropped for max_rows (or never shown)
        slot = slots.pop()
        if not slots:
            del self._slots[_key(row)]
        if vacate:  # its +U takes this place
            self._rows[slot] = None
            self._vacated.append(slot)
        else:
            del self._rows[slot]

    def _forget(self, slot: int) -> None:
        row = self._rows.pop(slot)
        if row is None:
            self._vacated.remove(slot)
            return
        slots = self._slots[_key(row)]
        slots.remove(slot)
        if not slots:
            del self._slots[_key(row)]

    def _purge_vacated(self) -> None:
        """A -U whose +U did not come in the same changes: its row is gone."""
        while self._vacated:
            del self._rows[self._vacated.popleft()]

    # -- what is shown ---------------------------------------------------------------------------
    def header(self) -> list[str]:
        return ["op", *self.columns] if self.mode == "changelog" else list(self.columns)

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows shown (with the op first in ``changelog`` mode), oldest first."""
        if self.mode == "changelog":
            return [(op, *row) for op, row in self._log]
        if self.mode == "append":
            return [row for _, row in self._log]
        return [row for row in self._rows.values() if row is not None]

    def frame(self) -> Any:
        """The rows shown as a pandas DataFrame (``--out``)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=self.header())

    def cells(self) -> list[list[str]]:
        """The rows shown as Flink prints their values."""
        types = (["STRING"] if self.mode == "changelog" else []) + self.types
        return [[cell_string(v, t) for v, t in zip(row, types)] for row in self.rows()]

    def single(self) -> str:
        """``single`` mode's HTML: the template filled with the last row's values (escaped)."""
        rows = self.rows()
        if not rows:
            return ""
        values = [escape(cell_string(v, t)) for v, t in zip(rows[-1], self.types)]
        named = {c: v for c, v in zip(self.columns, values) if c.isidentifier()}
        return self.template.format(*values, **named)

    def summary(self) -> str:
        """One line: how many rows are shown, and how many were dropped."""
        shown = len(self.rows())
        text = f"{shown} {'row' if shown == 1 else 'rows'} ({self.mode} mode)"
        dropped = self.dropped + self.dropped_by_job
        if dropped:
            text += (f"; {dropped} older {'row' if dropped == 1 else 'rows'} dropped "
                     f"(--max-rows {self.max_rows})")
        return text

    def html(self, status: str | None = None, note: str = "") -> str:
        """The cell's output: the result, a summary line and the job's status."""
        head = badge(status) + " " if status else ""
        line = f'<div style="color: #555;">{head}{escape(self.summary())}{escape(note)}</div>'
        if self.mode == "single":
            body = self.single()
        else:
            body = table(self.header(), [[escape(c) for c in row] for row in self.cells()])
        return f'<div class="sc-sql-result" style="{FONT}">{body}{line}</div>'

    def text(self, status: str | None = None) -> str:
        """The result as plain text (a terminal, ``text/plain``)."""
        lines = ["\t".join(self.header())] + ["\t".join(c) for c in self.cells()]
        if self.mode == "single":
            lines = [self.single()]
        return "\n".join([*lines, self.summary() + (f" [{status}]" if status else "")])


def substitute(text: str, namespace: Mapping[str, Any]) -> str:
    """``{name}`` in ``text`` replaced by ``str(namespace[name])`` (a kernel variable), ``{{``
    and ``}}`` by ``{`` and ``}``. Anything else in braces is left as it is; an unknown name
    fails, naming it."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "{}" and text[i:i + 2] in ("{{", "}}"):
            out.append(ch)
            i += 2
            continue
        if ch == "{":
            end = text.find("}", i + 1)
            name = text[i + 1:end] if end > 0 else ""
            if name.isidentifier():
                if name not in namespace:
                    raise NameError(f"{{{name}}}: no variable {name!r} in the kernel (write "
                                    f"{{{{{name}}}}} for the braces, or use --no-substitute)")
                out.append(str(namespace[name]))
                i = end + 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)
