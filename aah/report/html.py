"""The report as one self-contained HTML page: tables, notes and PNG charts inline.

Nothing is loaded from elsewhere: the style is inline and each chart is a
base64 ``data:`` image, so the file can be mailed or archived as is. Every
text goes through ``html.escape`` (run and model names, queries, final
answers, annotator names, even the report's own labels), so a ``<script>`` in
a model's answer shows as text. The page also carries a content security
policy that allows no script at all, as a second line of defence.
"""

from __future__ import annotations

from html import escape

from aah.report.build import Report
from aah.report.charts import png_data_uri, report_charts
from aah.report.tables import report_tables, run_label
from aah.scoring import ReportTable

# No script, no remote fetch: only inline style and data: images.
# Before a flagged row's last cell, with the flag's word: visible without colour.
FLAG_MARK = "\u26a0"
CONTENT_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 80rem;
       padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
td { max-width: 30rem; overflow-wrap: anywhere; white-space: pre-line; }
p.caption { color: #555; font-size: 0.85rem; margin-top: 0; }
tr.flagged td { background: #fdecea; }
span.marker { color: #a40000; font-weight: bold; }
figure { display: inline-block; margin: 0.5rem 1rem 1rem 0; max-width: 100%; }
img { max-width: 100%; height: auto; }
div.wide { max-width: 100%; overflow-x: auto; }
figcaption { color: #555; font-size: 0.85rem; }
"""


def html_table(item: ReportTable) -> str:
    """One table with its heading and caption, every text escaped.

    A flagged row (a published value outside the computed interval) carries
    the class ``flagged`` and its flag ("outside"), and its last cell starts
    with a visible marker naming the flag, so that it shows without style too.
    """
    head = "".join(f"<th>{escape(column)}</th>" for column in item.columns)
    body = "\n".join(
        _html_row(row, index in item.flagged, item.flag) for index, row in enumerate(item.rows)
    )
    caption = f'<p class="caption">{escape(item.caption)}</p>' if item.caption else ""
    return (
        f"<section>\n<h2>{escape(item.title)}</h2>\n"
        '<div class="wide">'  # a wide table scrolls in its own box, never the page
        f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table></div>\n"
        f"{caption}\n</section>"
    )


def _html_row(row: list[str], flagged: bool, flag: str) -> str:
    cells = [f"<td>{escape(cell)}</td>" for cell in row]
    if not flagged:
        return "<tr>" + "".join(cells) + "</tr>"
    marker = f'<span class="marker">{FLAG_MARK} {escape(flag or "flagged")}</span> '
    cells[-1] = f"<td>{marker}{escape(row[-1])}</td>"
    return f'<tr class="flagged {escape(flag, quote=True)}">' + "".join(cells) + "</tr>"


def html_chart(title: str, png: bytes) -> str:
    """One chart as an inline image with its caption."""
    return (
        f'<figure><img src="{png_data_uri(png)}" alt="{escape(title)}">'
        f"<figcaption>{escape(title)}</figcaption></figure>"
    )


def render_html(report: Report) -> str:
    """The whole report as one HTML document (UTF-8 text)."""
    runs = ", ".join(run_label(run) for run in report.runs)
    charts = "\n".join(html_chart(title, png) for title, png in report_charts(report))
    tables = "\n".join(html_table(item) for item in report_tables(report))
    notes = "".join(f"<li>{escape(note)}</li>" for note in report.notes)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>aah report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<h1>aah report</h1>\n<p>Runs: {escape(runs)}</p>\n"
        f"<section>\n<h2>Charts</h2>\n{charts}\n</section>\n{tables}\n"
        + (f"<section>\n<h2>Notes</h2>\n<ul>{notes}</ul>\n</section>\n" if notes else "")
        + "</body>\n</html>\n"
    )
