"""The report's charts, drawn off-screen with matplotlib's Agg backend.

Three charts (four where a run has blockers): the pass rate per setting and
run (grouped bars, 95% Wilson interval whiskers; titled "with and without
Aah" only where some model has runs of both), awareness against interaction
(one panel per setting, like with like: what "aware" means differs per
setting, science.md §2; only runs that could ask, since without Aah the
interaction ratio is 0 by construction), the behaviour confusion matrix (a
heatmap), and the first question's position per benchmark cell (boxes, plain
and Aah side by side; science.md §8). Each is a
``Figure`` drawn straight onto an Agg canvas: no pyplot, so no global figure
state and no GUI backend, and charts can be drawn from any thread.

A cell without data draws nothing and says so: no bar for a pass rate that
the tables do not show either (a cell with ungraded or unfinished sessions,
whose #pass / N would read as 0%), no point for an awareness or interaction
with nothing to count, no heatmap without gold labels; a "no data" text
stands where the figure would be.

The HTML page embeds them as PNG at screen resolution; ``write_charts`` writes
each for print: PNG at ``PRINT_DPI``, SVG and PDF (vector, fonts as paths so
that they look the same everywhere).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from aah.report.build import Report
from aah.report.tables import pair_runs, pooled_matrix
from aah.scoring import SETTINGS, CellMetrics, Proportion
from aah.scoring.behavior import BEHAVIOR_CLASSES, CLASS_NAMES, ConfusionMatrix

DPI = 100
PRINT_DPI = 300
PRINT_FORMATS = ("png", "svg", "pdf")
PAIR_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def figure_bytes(figure: Figure, format: str = "png", dpi: int = DPI) -> bytes:
    """``figure`` rendered as ``format`` (png, svg or pdf) bytes, PNG at ``dpi``."""
    buffer = BytesIO()
    FigureCanvasAgg(figure)  # attaches itself: the figure now draws with Agg
    # A tight box keeps a legend placed beside the axes inside the image; no date in
    # the SVG or PDF, so that the same report writes the same files.
    figure.savefig(
        buffer, format=format, dpi=dpi, bbox_inches="tight", metadata=_NO_DATE.get(format)
    )
    return buffer.getvalue()


_NO_DATE: dict[str, dict[str, None]] = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}


def png_bytes(figure: Figure) -> bytes:
    """``figure`` rendered by the Agg backend as PNG bytes, at screen resolution."""
    return figure_bytes(figure)


def png_data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,...`` URI that embeds ``png`` in a page."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def plain_label(text: str) -> str:
    """``text`` drawn as written: ``$`` would start math, a leading ``_`` hide a legend entry."""
    text = text.replace("$", r"\$")
    return f" {text}" if text.startswith("_") else text


NO_DATA_TEXT = "no data"
# The settings whose cells have an awareness figure (No-tools asks no awareness question).
AWARENESS_SETTINGS = tuple(setting for setting in SETTINGS if setting != "notools")


def _say_no_data(axes: Axes, why: str = "") -> None:
    text = f"{NO_DATA_TEXT}:\n{why}" if why else NO_DATA_TEXT
    axes.text(0.5, 0.5, text, transform=axes.transAxes, ha="center", va="center", wrap=True)


def _measured(value: Proportion | None) -> bool:
    return value is not None and value.value is not None and value.n > 0


def chart_pass_rate(cell: CellMetrics) -> Proportion | None:
    """The pass rate a chart may draw: None where the tables show none either.

    A cell with ungraded or unfinished sessions would count them as fails
    (#pass / N), so its bar would read lower than anything measured.
    """
    if cell.ungraded or cell.unfinished or not _measured(cell.pass_rate):
        return None
    return cell.pass_rate


def _percent(value: Proportion) -> tuple[float, float, float]:
    # (value, distance down to the low bound, distance up to the high bound), in percent.
    assert value.value is not None and value.low is not None and value.high is not None
    return 100 * value.value, 100 * (value.value - value.low), 100 * (value.high - value.value)


def pass_rate_chart(report: Report) -> bytes:
    """Grouped bars: each setting's pass rate per run, runs without Aah hatched."""
    return png_bytes(pass_rate_figure(report))


def has_aah_pairs(report: Report) -> bool:
    """Whether some model has a run without Aah and one with it in the report."""
    pairs = pair_runs(report.runs, report.cells)
    return any(pair.without is not None and pair.with_aah is not None for pair in pairs)


def pass_rate_figure(report: Report) -> Figure:
    """The pass-rate bars as a figure (see ``pass_rate_chart``)."""
    by_key = {(cell.run, cell.setting): cell for cell in report.cells}
    # Paired runs side by side, the one without Aah first; a pair shares a colour.
    runs = [
        (name, _aah(report, name), PAIR_COLORS[number % len(PAIR_COLORS)])
        for number, pair in enumerate(pair_runs(report.runs, report.cells))
        for name, _ in pair.labelled()
    ]
    settings = _settings(report.cells)
    figure = Figure(figsize=(max(6.0, 1.6 * len(settings) + 2), 4.2), dpi=DPI)
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(runs))
    drawn = False
    for index, (run, aah, color) in enumerate(runs):
        rates = {
            position: chart_pass_rate(by_key[run, setting])
            for position, setting in enumerate(settings)
            if (run, setting) in by_key
        }
        for position, rate in rates.items():
            if rate is None:  # no bar: say so where it would stand
                axes.text(
                    position - 0.4 + width * (index + 0.5), 1, NO_DATA_TEXT,
                    rotation=90, ha="center", va="bottom", fontsize="x-small", color="#555555",
                )  # fmt: skip
        bars = [(position, _percent(rate)) for position, rate in rates.items() if rate is not None]
        if not bars:
            continue
        drawn = True
        xs = [position - 0.4 + width * (index + 0.5) for position, _ in bars]
        heights = [figures[0] for _, figures in bars]
        whiskers = [[f[1] for _, f in bars], [f[2] for _, f in bars]]
        axes.bar(
            xs,
            heights,
            width,
            yerr=whiskers,
            capsize=3,
            label=_run_label(run, aah),
            color=color,
            hatch="//" if aah is False else None,
            edgecolor="white",
            ecolor="#333333",
        )
    axes.set_xticks(range(len(settings)), [plain_label(s or "(none)") for s in settings])
    axes.set_ylim(0, 100)
    axes.set_ylabel("pass rate (%), 95% Wilson interval")
    paired = has_aah_pairs(report)
    axes.set_title("Pass rate with and without Aah" if paired else "Pass rate per setting")
    if drawn:
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        _say_no_data(axes)
    return figure


def awareness_interaction_chart(report: Report) -> bytes:
    """Per setting, each run that could ask: awareness against interaction ratio."""
    return png_bytes(awareness_interaction_figure(report))


def awareness_interaction_figure(report: Report) -> Figure:
    """The awareness panels as a figure (see ``awareness_interaction_chart``).

    One panel per setting with an awareness figure, so that each compares like
    with like (awareness is each setting's own formula: "aware" in perfect is
    a yes, in under-specified a no or idk); in each, one point per run with
    Aah (or Aah unknown) with its 95% Wilson whiskers both ways. Runs without
    Aah are left out: nobody to ask, so their interaction ratio is 0 by
    construction. Runs are told apart by colour and marker in one legend, not
    by labels beside the points, which would print over each other.
    """
    asking = [run.name for run in report.runs if _aah(report, run.name) is not False]
    by_key = {(cell.run, cell.setting): cell for cell in report.cells}
    settings = [s for s in _settings(report.cells) if s in AWARENESS_SETTINGS]
    panels: list[str | None] = list(settings) or [None]
    figure = Figure(figsize=(3.2 * len(panels) + 2.4, 4.0), dpi=DPI)
    grid = figure.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    styles = {
        run: (PAIR_COLORS[number % len(PAIR_COLORS)], _MARKERS[number % len(_MARKERS)])
        for number, run in enumerate(asking)
    }
    legend: dict[str, Any] = {}
    for axes, setting in zip(grid, panels, strict=True):
        missing, present = 0, 0
        for run in asking if setting is not None else []:
            cell = by_key.get((run, setting))
            if cell is None:
                continue
            present += 1
            if not (_measured(cell.awareness) and _measured(cell.interaction)):
                missing += 1
                continue
            assert cell.awareness is not None and cell.interaction is not None
            x, x_low, x_high = _percent(cell.awareness)
            y, y_low, y_high = _percent(cell.interaction)
            color, marker = styles[run]
            drawn = axes.errorbar(
                [x], [y], xerr=[[x_low], [x_high]], yerr=[[y_low], [y_high]],
                fmt=marker, color=color, ecolor=color, elinewidth=1, capsize=2, zorder=3,
            )  # fmt: skip
            legend.setdefault(run, drawn)
        axes.set_xlim(-5, 105)
        axes.set_ylim(-5, 105)
        axes.grid(alpha=0.3)
        axes.set_title(plain_label(setting) if setting is not None else "awareness")
        axes.set_xlabel("awareness (%)")
        if not axes.lines:
            why = "nothing to count" if present else "no run with Aah"
            _say_no_data(axes, why if setting is not None else "")
        elif missing:
            axes.text(
                0.02, 0.02, f"{NO_DATA_TEXT}: {missing} run(s)", transform=axes.transAxes,
                fontsize="x-small", color="#555555",
            )  # fmt: skip
    grid[0].set_ylabel("interaction ratio (%)")
    figure.suptitle("Awareness vs interaction, per setting (runs with Aah)")
    if legend:
        figure.legend(
            list(legend.values()),
            [_run_label(run, _aah(report, run)) for run in legend],
            fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 0.9),
        )  # fmt: skip
    figure.tight_layout()
    return figure


_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def confusion_chart(matrix: ConfusionMatrix) -> bytes:
    """The confusion matrix as a heatmap, each cell labelled with its count."""
    return png_bytes(confusion_figure(matrix))


def confusion_figure(matrix: ConfusionMatrix) -> Figure:
    """The confusion heatmap as a figure (see ``confusion_chart``)."""
    figure = Figure(figsize=(6.0, 5.0), dpi=DPI)
    axes = figure.add_subplot()
    title = "Behaviour of first turns (all runs)"
    axes.set_title(title)
    if not matrix.total:
        # An all-zero heatmap would look like a measured matrix: draw none.
        axes.set_axis_off()
        _say_no_data(axes, "no gold-labelled first turns")
        return figure
    axes.imshow([list(row) for row in matrix.counts], cmap="Blues")
    names = [CLASS_NAMES[label] for label in BEHAVIOR_CLASSES]
    axes.set_xticks(range(len(names)), names, rotation=20, ha="right")
    axes.set_yticks(range(len(names)), names)
    peak = max(max(row) for row in matrix.counts) or 1
    for row, counts in enumerate(matrix.counts):
        for column, count in enumerate(counts):
            color = "white" if count > peak / 2 else "black"
            axes.text(column, row, str(count), ha="center", va="center", color=color)
    axes.set_xlabel("predicted")
    axes.set_ylabel("gold")
    figure.tight_layout()
    return figure


def chart_figures(report: Report) -> list[tuple[str, str, Figure]]:
    """Every chart of the report: a file name stem, its title, the figure."""
    pass_title = (
        "Pass rate with and without Aah, per setting"
        if has_aah_pairs(report)
        else "Pass rate per setting and run"
    )
    return [
        ("pass_rate", pass_title, pass_rate_figure(report)),
        (
            "awareness_interaction",
            "Awareness vs interaction ratio, per setting (runs with Aah)",
            awareness_interaction_figure(report),
        ),
        (
            "behaviour_confusion",
            "Behaviour confusion matrix (first turns)",
            confusion_figure(pooled_matrix(report)),
        ),
        # Only reports over runs of benchmarks with blockers have this chart.
        *(
            [("first_question", FIRST_QUESTION_TITLE, first_question_figure(report))]
            if report.asking
            else []
        ),
    ]


FIRST_QUESTION_TITLE = "When the agent first asks: first-question position per cell"


def first_question_figure(report: Report) -> Figure:
    """The first question's position per benchmark cell, plain and Aah side by side.

    One box per cell and side (median, quartiles, whiskers to the extremes)
    over the tasks that asked at least once; 0 is a question at the first
    model step, 1 at the last. A cell where no task asked draws no box and
    says so under its label.
    """
    cells = sorted(report.asking, key=lambda f: (f.benchmark, f.setting, f.category, f.aah, f.run))
    labels = [
        f"{f.benchmark} {f.category or f.setting} {'Aah' if f.aah else 'plain'}".strip()
        + ("" if f.positions else f"\n({NO_DATA_TEXT})")
        for f in cells
    ]
    figure = Figure(figsize=(max(4.0, 1.1 * len(cells) + 2.0), 4.0), dpi=DPI)
    axes = figure.subplots()
    data = [list(f.positions) or [float("nan")] for f in cells]
    boxes = axes.boxplot(data, whis=(0, 100), patch_artist=True)
    for box, f in zip(boxes["boxes"], cells, strict=True):
        box.set_facecolor(PAIR_COLORS[1] if f.aah else PAIR_COLORS[0])
        box.set_alpha(0.6)
    axes.set_xticks(range(1, len(cells) + 1), labels, rotation=30, ha="right", fontsize="small")
    axes.set_ylim(-0.05, 1.05)
    axes.set_ylabel("model steps before the first question / steps")
    axes.grid(alpha=0.3, axis="y")
    if not any(f.positions for f in cells):
        _say_no_data(axes, "no task asked a question")
    figure.suptitle(FIRST_QUESTION_TITLE)
    figure.tight_layout()
    return figure


def report_charts(report: Report) -> list[tuple[str, bytes]]:
    """Every chart of the report with its title, as PNG bytes at screen resolution."""
    return [(title, png_bytes(figure)) for _, title, figure in chart_figures(report)]


def write_charts(report: Report, folder: Path) -> list[Path]:
    """Write every chart to ``folder`` (made if missing) as PNG at 300 dpi, SVG and PDF.

    Returns:
        The files written, three per chart: ``<stem>.png``, ``.svg``, ``.pdf``.

    Raises:
        OSError: The folder cannot be made or a file cannot be written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for stem, _, figure in chart_figures(report):
        for format in PRINT_FORMATS:
            path = folder / f"{stem}.{format}"
            path.write_bytes(figure_bytes(figure, format, PRINT_DPI))
            written.append(path)
    return written


def _settings(cells: Sequence[CellMetrics]) -> list[str | None]:
    found = {cell.setting for cell in cells}
    others = sorted((s for s in found if s not in SETTINGS), key=lambda s: s or "")
    return [*(s for s in SETTINGS if s in found), *others]


def _aah(report: Report, run: str) -> bool | None:
    values = {cell.aah for cell in report.cells if cell.run == run}
    return values.pop() if len(values) == 1 else None


def _run_label(run: str, aah: bool | None) -> str:
    if aah is None:
        return plain_label(run)
    return plain_label(run) + (" (with Aah)" if aah else " (without Aah)")
