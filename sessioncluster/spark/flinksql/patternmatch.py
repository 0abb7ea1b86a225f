"""MATCH_RECOGNIZE's row pattern matched over one partition's rows, as Flink's CEP NFA does.

A pattern is a sequence of variables with quantifiers (``A B+ C{2,3}?``), strictly contiguous.
Every row starts a partial match; each partial match takes the row into its current variable,
or proceeds to a next one (over optional variables), whichever DEFINE condition holds: all
branches are followed at once. Flink's greedy quantifiers (``+ * {n,} {n,m}`` except ``{n}``)
do not proceed while the row satisfies the looping variable's condition, whatever its count;
reluctant ones (``+?``) proceed as soon as they can. A match found is held while a partial
match that started earlier is still open, then emitted, and the after-match skip strategy
drops the partial and found matches that start before its skip point. ``WITHIN`` drops the
partial matches whose first row is that long before the current one. At the end of the rows
open partial matches are dropped, and so are the matches they hold (as Flink's do). Matching
resumes (:func:`feed`): over an unbounded stream each micro-batch's final rows continue from the
state the last one left (:class:`MatchState`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence


class PatternError(ValueError):
    """A pattern or skip strategy Flink refuses, worded as Flink words it."""


@dataclass(frozen=True, slots=True)
class Element:
    """One pattern variable with its quantifier: ``low`` to ``high`` (None: no bound) rows."""

    variable: str
    low: int = 1
    high: int | None = 1
    greedy: bool = False


@dataclass(frozen=True, slots=True)
class Skip:
    """``AFTER MATCH SKIP``: ``PAST LAST ROW``, ``TO NEXT ROW``, ``TO FIRST`` or ``TO LAST``
    (``variable`` set for the last two)."""

    kind: str = "PAST LAST ROW"
    variable: str | None = None


#: a row of a match: its position in the partition and the variable it is mapped to
Assigned = tuple[int, str]
#: ``condition(variable, row, assigned)``: whether ``row`` may be mapped to ``variable`` after
#: the rows ``assigned`` so far
Condition = Callable[[str, int, tuple[Assigned, ...]], bool]

_TOKEN = re.compile(
    r"\s*(?:(?P<var>[A-Za-z_][A-Za-z_0-9$]*|`[^`]+`)"
    r"|(?P<q>[+*?]|\{\s*\d*\s*(?:,\s*\d*\s*)?\})(?P<reluctant>\?)?"
    r"|(?P<other>\{-|-\}|\S))"
)
_UNSUPPORTED = {"(": "Pattern groups", ")": "Pattern groups", "|": "Pattern alternation",
                "{-": "Pattern exclusion {- -}", "-}": "Pattern exclusion {- -}",
                "^": "Pattern anchors (^, $)", "$": "Pattern anchors (^, $)"}


def parse_pattern(text: str) -> list[Element]:
    """The elements of a ``PATTERN (...)``'s text; PatternError for what Flink does not run."""
    elements: list[Element] = []
    quantified = False
    for m in _TOKEN.finditer(text):
        if m.group("var"):
            name = m.group("var").strip("`")
            if name.upper() == "PERMUTE":
                raise PatternError("MATCH_RECOGNIZE's PERMUTE is not supported")
            elements.append(Element(name))
            quantified = False
        elif m.group("q"):
            if not elements or quantified:
                raise PatternError(f"Unexpected quantifier in pattern: {text}")
            elements[-1] = _quantified(elements[-1].variable, m.group("q"),
                                       bool(m.group("reluctant")))
            quantified = True
        elif m.group("other"):
            what = _UNSUPPORTED.get(m.group("other"), f"'{m.group('other')}' in a pattern")
            raise PatternError(f"MATCH_RECOGNIZE: {what} not supported")
    if not elements:
        raise PatternError("MATCH_RECOGNIZE: an empty pattern")
    last = elements[-1]
    if last.greedy:
        raise PatternError("Greedy quantifiers are not allowed as the last element of a Pattern "
                           "yet. Finish your pattern with either a simple variable or reluctant "
                           "quantifier.")
    return elements


def _quantified(variable: str, q: str, reluctant: bool) -> Element:
    if q in "+*?":
        low, high = {"+": (1, None), "*": (0, None), "?": (0, 1)}[q]
    else:
        low_text, _, high_text = q.strip("{} ").partition(",")
        low = int(low_text or 0)
        high = int(high_text) if high_text.strip() else (None if "," in q else low)
    if high is not None and (high < low or high == 0):
        raise PatternError(f"Invalid quantifier {q} of {variable}")
    if low == 0 and high is not None and high > 1:
        raise PatternError("The from should be a positive number greater than 0.")
    optional = (low, high) == (0, 1)
    if optional and reluctant:
        raise PatternError("Reluctant optional variables are not supported yet.")
    return Element(variable, low, high, greedy=not reluctant and not optional and low != high)


def check_skip(elements: Sequence[Element], skip: Skip) -> None:
    """PatternError for a skip strategy Flink refuses with this pattern."""
    names = {e.variable for e in elements}
    if skip.variable is not None and skip.variable not in names:
        raise PatternError(f"Unknown pattern variable {skip.variable} in AFTER MATCH SKIP")
    if skip.kind == "TO FIRST" and skip.variable == elements[0].variable:
        raise PatternError("Could not skip to first element of a match.")


@dataclass(frozen=True, slots=True)
class _Partial:
    start: int
    element: int  # the element the last row was taken into (-1: none yet)
    count: int  # the rows taken into it
    rows: tuple[Assigned, ...]


@dataclass(slots=True)
class MatchState:
    """Where matching stopped: the partial matches open and the matches found but held (plain
    data, kept between micro-batches), and the position of the next row to feed."""

    partials: list[_Partial] = field(default_factory=list)
    found: list[_Partial] = field(default_factory=list)
    next_row: int = 0

    def first_needed(self) -> int:
        """The first row a partial or held match still holds (rows before it can go)."""
        return min((p.start for p in self.partials + self.found), default=self.next_row)


def find_matches(count: int, elements: Sequence[Element], condition: Condition,
                 skip: Skip = Skip(), times: Sequence[int] | None = None,
                 within: int | None = None) -> list[tuple[Assigned, ...]]:
    """The matches over rows ``0..count-1`` (in their order), each its rows and variables;
    ``times`` (each row's time) with ``within`` (the same unit) for ``WITHIN``."""
    return feed(MatchState(), count, elements, condition, skip, times, within)


def feed(state: MatchState, until: int, elements: Sequence[Element], condition: Condition,
         skip: Skip = Skip(), times: Mapping[int, int] | Sequence[int] | None = None,
         within: int | None = None) -> list[tuple[Assigned, ...]]:
    """The matches completed by rows ``state.next_row..until-1`` (positions go on from one call
    to the next), ``state`` brought up to ``until``: feeding rows in several calls gives the
    matches one call gives."""
    partials, found = state.partials, state.found
    matches: list[tuple[Assigned, ...]] = []
    last = len(elements) - 1
    for row in range(state.next_row, until):
        if within is not None and times is not None:
            partials = [p for p in partials if times[row] - times[p.start] < within]
        grown: list[_Partial] = []
        for partial in partials + [_Partial(row, -1, 0, ())]:
            for q in _advance(partial, row, elements, condition):
                if q.count >= elements[q.element].low \
                        and all(e.low == 0 for e in elements[q.element + 1:]):
                    found.append(q)
                high = elements[q.element].high
                if q.element < last or high is None or q.count < high:
                    grown.append(q)
        partials = grown
        found.sort(key=lambda p: p.start)
        while found and (not partials or found[0].start <= min(p.start for p in partials)):
            partials, found = _emit(found, partials, matches, skip)
    state.partials, state.found, state.next_row = partials, found, max(until, state.next_row)
    return matches


def _emit(found: list[_Partial], partials: list[_Partial], matches: list[tuple[Assigned, ...]],
          skip: Skip) -> tuple[list[_Partial], list[_Partial]]:
    """The first found match emitted; the partial and found matches the skip leaves."""
    rows = found[0].rows
    matches.append(rows)
    if skip.kind == "PAST LAST ROW":
        def kept(start: int) -> bool:
            return start > rows[-1][0]
    elif skip.kind == "TO NEXT ROW":
        def kept(start: int) -> bool:
            return start > rows[0][0]
    else:
        mapped = [r for r, v in rows if v == skip.variable]
        if not mapped:
            raise PatternError(f"Could not skip to {skip.variable}. No such element in the "
                               "found match")
        point = mapped[0] if skip.kind == "TO FIRST" else mapped[-1]

        def kept(start: int) -> bool:
            return start >= point
    return ([p for p in partials if kept(p.start)],
            [p for p in found[1:] if kept(p.start)])


def _advance(partial: _Partial, row: int, elements: Sequence[Element],
             condition: Condition) -> list[_Partial]:
    """The partial matches ``partial`` becomes with ``row``: taken into its current element,
    or into a next one."""
    out: list[_Partial] = []
    i, n = partial.element, partial.count
    if i >= 0:
        current = elements[i]
        takes = condition(current.variable, row, partial.rows)
        if takes and (current.high is None or n < current.high):
            out.append(_Partial(partial.start, i, n + 1, partial.rows + ((row, current.variable),)))
        if n < current.low or current.greedy and takes:
            return out
    for j in range(i + 1, len(elements)):
        element = elements[j]
        takes = condition(element.variable, row, partial.rows)
        if takes:
            out.append(_Partial(partial.start, j, 1, partial.rows + ((row, element.variable),)))
        if element.low > 0 or element.greedy and takes:
            break
    return out
