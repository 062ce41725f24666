"""The report's per-cell figures as CSV, one row per run × setting, for spreadsheets.

Columns follow ``cell_to_json``'s keys in order; each proportion ``P`` spreads
over five columns: ``<name>`` (the share, 0 to 1), ``<name>_low`` and
``<name>_high`` (its 95% Wilson interval), ``<name>_k`` and ``<name>_n``. A
figure a setting does not report, or one with nothing to count, is an empty
cell. Run and model names are written as they are, quoted where CSV needs
it; a text that a spreadsheet would read as a formula (starting with ``=``,
``+``, ``-``, ``@``) gets a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from aah.benchmark import report_parts
from aah.report.build import Report
from aah.scoring import cell_to_json

PROPORTION_PARTS = ("", "_low", "_high", "_k", "_n")
_PROPORTION_KEYS = ("value", "low", "high", "k", "n")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_rows(report: Report) -> list[list[str]]:
    """The header row, then one row per cell of the report."""
    objects = [cell_to_json(cell) for cell in report.cells]
    if not objects:
        return [["run", "setting", "n"]]
    # Every cell has the same keys; a proportion is a dict in some cell or None in all.
    names = list(objects[0])
    spread = {name for name in names for data in objects if isinstance(data[name], dict)}
    header = [
        f"{name}{part}"
        for name in names
        for part in (PROPORTION_PARTS if name in spread else ("",))
    ]
    rows = [header]
    for data in objects:
        row: list[str] = []
        for name in names:
            value = data[name]
            if name in spread:
                row += [_text(None if value is None else value[key]) for key in _PROPORTION_KEYS]
            else:
                row.append(_text(value))
        rows.append(row)
    return rows


def render_csv(report: Report) -> str:
    """The per-cell figures as CSV text (RFC 4180 quoting, CRLF line ends)."""
    sink = io.StringIO()
    csv.writer(sink).writerows(csv_rows(report))
    for _benchmark, part in report_parts():
        # A benchmark's own figures (BFCL's per language), after a blank row.
        scores = report.benchmarks.get(part.key)
        own = part.csv_rows(scores) if scores else []
        if own:
            rows = [[_text(value) for value in row] for row in own]
            csv.writer(sink).writerows([[], *rows])
    if report.approval_cells:
        # Imported here: only reports over runs with approvals have this table.
        from aah.report.approval_tables import approval_csv_rows

        rows = [[_text(value) for value in row] for row in approval_csv_rows(report)]
        csv.writer(sink).writerows([[], *rows])
    if report.asking:
        # Imported here: only reports over runs of benchmarks with blockers have this table.
        from aah.report.asking_tables import asking_csv_rows

        rows = [[_text(value) for value in row] for row in asking_csv_rows(report)]
        csv.writer(sink).writerows([[], *rows])
    if report.external:
        # Imported here: only reports with external agents (MCP clients) have this table.
        from aah.report.external_tables import external_csv_rows

        rows = [[_text(value) for value in row] for row in external_csv_rows(report)]
        csv.writer(sink).writerows([[], *rows])
    return sink.getvalue()


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    if isinstance(value, str) and text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text
