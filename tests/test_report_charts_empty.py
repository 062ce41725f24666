"""Charts of cells without data draw nothing and say so; awareness is plotted per setting.

The charts are inspected as matplotlib objects (bars, points, images, texts),
never as pixels. The corpus holds every way a cell can lack the figure a
chart draws: sessions ungraded, unfinished or all skipped, runs that could
not ask (without Aah), no gold labels at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from aah.events import AwarenessEvent, FinalAnswerEvent, HumanQuestionEvent
from aah.report import build_report
from aah.report.build import Report
from aah.report.charts import (
    awareness_interaction_figure,
    confusion_figure,
    pass_rate_figure,
)
from aah.report.tables import pooled_matrix
from aah.store.sessions import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "c.db") as opened:
        yield opened


def add(
    store: SessionStore,
    run: str,
    task: str,
    *,
    setting: str = "perfect",
    aah: bool = True,
    status: str = "finished",
    verdict: str | None = "pass",
    awareness: str = "yes",
    asked: bool = False,
) -> None:
    """One session; ``status`` "running" leaves it unfinished, ``verdict`` None ungraded."""
    if store.get_run(run) is None:
        store.create_run(run, {"model": "m", "aah": aah})
    session = store.open_session(
        f"Query {task}", run=run, task_id=task, setting=setting, model="m", aah=aah
    )
    question = "information" if setting == "underspecified" else "tool"
    store.append_event(AwarenessEvent(session_id=session.id, question=question, answer=awareness))
    if asked:
        store.append_event(
            HumanQuestionEvent(session_id=session.id, request_id=f"{task}-q", question="Which?")
        )
    if status == "running":
        return
    store.append_event(FinalAnswerEvent(session_id=session.id, text="Done."))
    store.finish_session(session.id, status, "Done.")  # type: ignore[arg-type]
    if verdict is not None and status == "finished":
        store.add_grade(session.id, "grader", "v1", [verdict], verdict)  # type: ignore[arg-type]


def bars(figure: Figure) -> list[float]:
    """The heights of the pass-rate bars drawn."""
    (axes,) = figure.axes
    return [patch.get_height() for patch in axes.patches if isinstance(patch, Rectangle)]


def texts(figure: Figure) -> str:
    every = [text.get_text() for axes in figure.axes for text in axes.texts]
    return " | ".join(every)


def points(figure: Figure) -> dict[str, int]:
    """Per awareness panel (its title), the points drawn (each an errorbar)."""
    return {
        axes.get_title(): sum(isinstance(c, ErrorbarContainer) for c in axes.containers)
        for axes in figure.axes
    }


def x_of_point(axes: Axes) -> float:
    (container,) = axes.containers
    data_line = container.lines[0]
    assert data_line is not None
    return float(data_line.get_xdata()[0])


def all_ungraded(store: SessionStore) -> None:
    for task in ("t1", "t2", "t3", "t4", "t5"):
        add(store, "r", task, verdict=None)


def all_unfinished(store: SessionStore) -> None:
    for task in ("t1", "t2", "t3"):
        add(store, "r", task, status="running")


def one_ungraded_among_passes(store: SessionStore) -> None:
    add(store, "r", "t1")
    add(store, "r", "t2", verdict=None)


def an_empty_run_beside_a_measured_one(store: SessionStore) -> None:
    add(store, "measured", "t1")
    for task in ("t1", "t2"):
        add(store, "empty", task, verdict=None, aah=False)


# (case, store, bars drawn, "no data" texts at least)
PASS_RATE_CASES: list[tuple[str, Callable[[SessionStore], None], int, int]] = [
    ("every session ungraded", all_ungraded, 0, 1),
    ("every session unfinished", all_unfinished, 0, 1),
    ("one ungraded among passes", one_ungraded_among_passes, 0, 1),
    ("an empty run beside a measured one", an_empty_run_beside_a_measured_one, 1, 1),
]


@pytest.mark.parametrize(
    ("build", "drawn", "said"),
    [c[1:] for c in PASS_RATE_CASES],
    ids=[c[0] for c in PASS_RATE_CASES],
)
def test_pass_rate_bars_only_where_the_tables_show_a_pass_rate(
    store: SessionStore, build: Callable[[SessionStore], None], drawn: int, said: int
) -> None:
    build(store)
    figure = pass_rate_figure(build_report(store))
    heights = bars(figure)
    assert len(heights) == drawn
    assert all(height > 0 for height in heights)  # never a 0% bar for a cell not counted
    assert texts(figure).count("no data") >= said


def report_of(store: SessionStore) -> Report:
    return build_report(store)


def test_awareness_is_plotted_per_setting_and_only_for_runs_that_could_ask(
    store: SessionStore,
) -> None:
    # Two runs without Aah: before, their points and labels lay on each other at y = 0.
    for run in ("off-a", "off-b"):
        add(store, run, "t1", aah=False)
        add(store, run, "t1", aah=False, setting="underspecified", awareness="no")
    # One run with Aah in two settings: before, its awareness was pooled over both.
    add(store, "on", "t1", asked=True)
    add(store, "on", "t2", setting="underspecified", awareness="idk", asked=True)
    figure = awareness_interaction_figure(report_of(store))
    assert points(figure) == {"perfect": 1, "underspecified": 1}
    # Runs are named in one legend, not by texts beside the points.
    assert texts(figure) == ""
    (legend,) = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == ["on (with Aah)"]
    # Each panel's point is that setting's own awareness: yes in perfect, no/idk under-specified.
    perfect, under = figure.axes
    assert x_of_point(perfect) == pytest.approx(100.0)
    assert x_of_point(under) == pytest.approx(100.0)


# (case, store, points per panel, what the text says)
AWARENESS_CASES: list[tuple[str, Callable[[SessionStore], None], dict[str, int], str]] = [
    (
        "runs without Aah only",
        lambda s: [add(s, "off", t, aah=False) for t in ("t1", "t2")],
        {"perfect": 0},
        "no data:\nno run with Aah",
    ),
    (
        "every task skipped: no interaction to count",
        lambda s: [add(s, "on", t, status="skipped", awareness="no") for t in ("t1", "t2")],
        {"perfect": 0},
        "no data:\nnothing to count",
    ),
    (
        "no-tools only: no awareness figure",
        lambda s: [add(s, "on", t, setting="notools") for t in ("t1", "t2")],
        {"awareness": 0},
        "no data",
    ),
    (
        "one run measured, one all skipped",
        lambda s: [
            add(s, "on", "t1", asked=True),
            add(s, "on-skipped", "t1", status="skipped", awareness="no"),
        ],
        {"perfect": 1},
        "no data: 1 run(s)",
    ),
]


@pytest.mark.parametrize(
    ("build", "expected", "said"),
    [c[1:] for c in AWARENESS_CASES],
    ids=[c[0] for c in AWARENESS_CASES],
)
def test_awareness_cells_without_data_draw_nothing_and_say_so(
    store: SessionStore, build: Callable[[SessionStore], None], expected: dict[str, int], said: str
) -> None:
    build(store)
    figure = awareness_interaction_figure(report_of(store))
    assert points(figure) == expected
    assert said in texts(figure)


def test_a_confusion_matrix_without_gold_labels_draws_no_heatmap(store: SessionStore) -> None:
    add(store, "r", "t1")
    figure = confusion_figure(pooled_matrix(build_report(store)))
    (axes,) = figure.axes
    assert len(axes.images) == 0  # before: an all-zero heatmap of sixteen 0s
    assert texts(figure) == "no data:\nno gold-labelled first turns"
    assert axes.get_title() == "Behaviour of first turns (all runs)"
