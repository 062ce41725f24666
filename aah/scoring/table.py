"""A table of figures as text, the one shape every benchmark's report tables take.

A benchmark builds its tables once, format-neutral (``ReportTable``: a title,
column names, rows of strings, a caption); the report's renderers (terminal,
Markdown, HTML) only differ in how they draw and escape them. A rate reads
``47.4 [37.6–57.3]``: percent, then its 95% Wilson interval; ``of n``
follows where the rate counts other tasks than the row's N; ``—`` marks a
figure the setting does not report; ``no data`` one it reports but has
nothing to count.
"""

from __future__ import annotations

from typing import NamedTuple

from aah.scoring.intervals import Proportion
from aah.scoring.repeats import Estimate

NOT_REPORTED = "—"
NO_DATA = "no data"
RATE_NOTE = "percent [95% Wilson interval]"


class ReportTable(NamedTuple):
    """One table of the report, every cell already text.

    Attributes:
        title: The heading above it.
        columns: Column names.
        rows: Cells, one list per row.
        caption: One line under it saying how to read it.
        keys: How many leading columns name a row: a terminal too narrow for
            the whole table repeats them in each part it splits the table into.
        flagged: Rows (indexes into ``rows``) a reader must not miss, e.g.
            a published value outside the computed interval; HTML marks them.
        flag: One word that says why those rows are flagged ("outside").
        widths: The terminal width planned per column (padding and rule
            included) when a table is split to fit; empty: as wide as it is.
    """

    title: str
    columns: list[str]
    rows: list[list[str]]
    caption: str = ""
    keys: int = 1
    flagged: tuple[int, ...] = ()
    flag: str = ""
    widths: tuple[int, ...] = ()


def format_rate(value: Proportion | None, n: int | None = None) -> str:
    """``47.4 [37.6–57.3]``; ``of k`` appended when the rate's N is not ``n``."""
    if value is None:
        return NOT_REPORTED
    if value.value is None or value.low is None or value.high is None:
        return NO_DATA
    text = f"{100 * value.value:.1f} [{100 * value.low:.1f}–{100 * value.high:.1f}]"
    return text if n is None or value.n == n else f"{text} of {value.n}"


def format_number(value: float | None, digits: int = 1) -> str:
    """A mean or score to ``digits`` places; ``no data`` for None."""
    return NO_DATA if value is None else f"{value:.{digits}f}"


def format_estimate(value: Estimate) -> str:
    """``62.5 [41.7–83.3]``: a mean over tasks and its bootstrap interval, in percent."""
    if value.value is None or value.low is None or value.high is None:
        return NO_DATA
    return f"{100 * value.value:.1f} [{100 * value.low:.1f}–{100 * value.high:.1f}]"
