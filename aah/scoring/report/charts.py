"""The report's charts, drawn off-screen with matplotlib's Agg backend.

Three charts: the pass rate per setting and run (grouped bars, 95% Wilson
interval whiskers; titled "with and without Aah" only where some model has
runs of both), awareness against interaction per run (a
labelled scatter), and the behaviour confusion matrix (a heatmap). Each is a
``Figure`` drawn straight onto an Agg canvas: no pyplot, so no global figure
state and no GUI backend, and charts can be drawn from any thread. A chart
with nothing to draw still comes out, saying "no data".

The HTML page embeds them as PNG at screen resolution; ``write_charts`` writes
each for print: PNG at ``PRINT_DPI``, SVG and PDF (vector, fonts as paths so
that they look the same everywhere).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from aah.benchmark import SETTINGS
from aah.scoring.behavior import BEHAVIOR_CLASSES, ConfusionMatrix
from aah.scoring.intervals import Proportion
from aah.scoring.metrics import CellMetrics
from aah.scoring.report.build import Report
from aah.scoring.report.tables import CLASS_NAMES, pair_runs, pooled_matrix

DPI = 100
PRINT_DPI = 300
PRINT_FORMATS = ("png", "svg", "pdf")
WITH_AAH_COLOR = "#1f77b4"
WITHOUT_AAH_COLOR = "#ff7f0e"
OTHER_COLOR = "#7f7f7f"
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


def _say_no_data(axes: Axes) -> None:
    axes.text(0.5, 0.5, "no data", transform=axes.transAxes, ha="center", va="center")


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
        bars = [
            (position, _percent(by_key[run, setting].pass_rate))
            for position, setting in enumerate(settings)
            if (run, setting) in by_key and by_key[run, setting].pass_rate.value is not None
        ]
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
    """One point per run: awareness (pooled over settings) against interaction ratio."""
    return png_bytes(awareness_interaction_figure(report))


def awareness_interaction_figure(report: Report) -> Figure:
    """The awareness scatter as a figure (see ``awareness_interaction_chart``)."""
    figure = Figure(figsize=(6.0, 4.8), dpi=DPI)
    axes = figure.add_subplot()
    drawn = False
    kinds: set[bool | None] = set()
    for run in report.runs:
        cells = [cell for cell in report.cells if cell.run == run.name]
        awareness = _pooled([cell.awareness for cell in cells])
        interaction = _pooled([cell.interaction for cell in cells])
        if awareness is None or interaction is None:
            continue
        drawn = True
        aah = _aah(report, run.name)
        kinds.add(aah)
        axes.scatter([awareness], [interaction], color=_color(aah), zorder=3)
        # Labels of points on the right half go to their left, to stay inside the chart.
        right = awareness > 50
        axes.annotate(
            plain_label(run.name),
            (awareness, interaction),
            fontsize="small",
            xytext=(-5 if right else 5, 5),
            textcoords="offset points",
            ha="right" if right else "left",
        )
    axes.set_xlim(-5, 105)
    axes.set_ylim(-5, 105)
    axes.set_xlabel("awareness (%), all settings")
    axes.set_ylabel("interaction ratio (%)")
    axes.set_title("Awareness vs interaction per run")
    axes.grid(alpha=0.3)
    if drawn:
        # The legend names only the kinds of run drawn.
        for aah in (True, False, None):
            if aah in kinds:
                axes.scatter([], [], color=_color(aah), label=_KIND_LABELS[aah])
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        _say_no_data(axes)
    return figure


_KIND_LABELS = {True: "with Aah", False: "without Aah", None: "Aah unknown"}


def confusion_chart(matrix: ConfusionMatrix) -> bytes:
    """The confusion matrix as a heatmap, each cell labelled with its count."""
    return png_bytes(confusion_figure(matrix))


def confusion_figure(matrix: ConfusionMatrix) -> Figure:
    """The confusion heatmap as a figure (see ``confusion_chart``)."""
    figure = Figure(figsize=(6.0, 5.0), dpi=DPI)
    axes = figure.add_subplot()
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
    title = "Behaviour of first turns (all runs)"
    axes.set_title(title if matrix.total else f"{title}: no data")
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
            "Awareness vs interaction ratio, per run",
            awareness_interaction_figure(report),
        ),
        (
            "behaviour_confusion",
            "Behaviour confusion matrix (first turns)",
            confusion_figure(pooled_matrix(report)),
        ),
    ]


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


def _pooled(rates: Sequence[Proportion | None]) -> float | None:
    counted = [rate for rate in rates if rate is not None]
    n = sum(rate.n for rate in counted)
    return 100 * sum(rate.k for rate in counted) / n if n else None


def _aah(report: Report, run: str) -> bool | None:
    values = {cell.aah for cell in report.cells if cell.run == run}
    return values.pop() if len(values) == 1 else None


def _color(aah: bool | None) -> str:
    if aah is None:
        return OTHER_COLOR
    return WITH_AAH_COLOR if aah else WITHOUT_AAH_COLOR


def _run_label(run: str, aah: bool | None) -> str:
    if aah is None:
        return plain_label(run)
    return plain_label(run) + (" (with Aah)" if aah else " (without Aah)")
