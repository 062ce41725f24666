"""The terminal app's left column: what to run, on which model, and which tools to break.

The panel owns its controls and the benchmark tasks it lists; it tells the
app when the chosen task may have changed, and turns the controls' values
into a ``TuiTask`` on request. Starting, breaking and fixing are the app's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Input, Label, Select, Static, Switch

from aah.benchmark import SCRIPTED_LABEL, demo_task, load_demo_tasks
from aah.errors import AahError
from aah.scoring import SETTINGS
from aah.tools.http import FAULT_KINDS, FaultKind
from aah.ui.tui.tasks import (
    TaskSource,
    TuiTask,
    benchmark_choice,
    demo_choice,
    free_text_choice,
    load_benchmark,
)

if TYPE_CHECKING:
    from aah.benchmark.failtalms import Task
    from aah.tools.registry import Registry

_SOURCES: list[tuple[str, TaskSource]] = [
    ("demo tasks", "demo"),
    ("benchmark", "benchmark"),
    ("free text", "free"),
]
_BOXES: dict[str, TaskSource] = {
    "#demo-box": "demo",
    "#bench-box": "benchmark",
    "#free-box": "free",
}
# The controls that define a session; they are frozen while one runs.
_SESSION_CONTROLS = (
    *("#start", "#source", "#model", "#aah"),
    *("#demo-task", "#bench-setting", "#bench-task", "#free-query"),
)


class SetupPanel(VerticalScroll):
    """Task source and task, model, Ask-and-Help, Start, and the fault toggles.

    Args:
        registry: Where the tasks' endpoints come from.
        data: The data directory for benchmark tasks (discovered when None).
        models: The model choices: (label, value) with value ``configured``
            or ``scripted``, the default first.
    """

    class ChoiceChanged(Message):
        """The chosen task may be a different one now."""

    source: reactive[TaskSource] = reactive("demo", init=False)
    # Its controls take the focus, each visibly; the panel itself need not.
    can_focus = False

    def __init__(
        self,
        registry: Registry,
        data: Path | None,
        models: list[tuple[str, str]],
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.registry = registry
        self.data = data
        self.models = models
        self.bench_tasks: list[Task] = []
        self.bench_problem = ""
        self._bench_requested = False

    def compose(self) -> ComposeResult:
        """The controls, top to bottom in the order a demo uses them."""
        demos = [(f"{n} {t.id}: {t.shows}", t.id) for n, t in enumerate(load_demo_tasks(), 1)]
        yield Label("Task", classes="section")
        yield Select(_SOURCES, value="demo", allow_blank=False, id="source")
        with Vertical(id="demo-box"):
            yield Select(demos, value=demos[0][1], allow_blank=False, id="demo-task")
        with Vertical(id="bench-box"):
            settings = [(s, s) for s in SETTINGS]
            yield Select(settings, value=SETTINGS[0], allow_blank=False, id="bench-setting")
            yield Select([], prompt="loading tasks…", id="bench-task")
        with Vertical(id="free-box"):
            yield Input(placeholder="Type a request, Enter starts it", id="free-query")
        yield Static("", id="task-note", classes="note")
        yield Label("Model", classes="section")
        yield Select(self.models, allow_blank=False, id="model")
        yield Static("", id="model-note", classes="note")
        with Horizontal(classes="switch-row"):
            yield Switch(value=True, id="aah")
            yield Label("Ask-and-Help (a)")
        yield Button("Start (s)", variant="success", id="start")
        yield Label("Break a tool now", classes="section")
        yield Select([], prompt="tool", id="fault-tool")
        with Horizontal(classes="buttons"):
            kinds = [(k, k) for k in FAULT_KINDS]
            yield Select(kinds, value="500", allow_blank=False, id="fault-kind")
            yield Button("Break", variant="error", id="break")
            yield Button("Fix all", id="fix")
        yield Static("no tool is broken", id="fault-list", classes="note")

    def on_mount(self) -> None:
        """Show the demo source and say which model answers."""
        self.watch_source(self.source)
        self._show_model_note()

    # -- what is chosen -------------------------------------------------------

    @property
    def model_choice(self) -> str:
        """``configured`` or ``scripted``."""
        return str(self.query_one("#model", Select).value)

    @property
    def aah(self) -> bool:
        """Whether the next session may ask a human."""
        return self.query_one("#aah", Switch).value

    def toggle_aah(self) -> None:
        """Flip Ask-and-Help for the next session."""
        switch = self.query_one("#aah", Switch)
        switch.value = not switch.value

    def select_demo(self, task_id: str) -> None:
        """Choose the demo task ``task_id``."""
        self.source = "demo"
        self.query_one("#demo-task", Select).value = task_id

    def focus_first(self) -> None:
        """Put the focus on the first control that takes it."""
        for widget in self.query("Select, Input, Switch, Button"):
            if widget.focusable:
                widget.focus()
                return

    def fault_choice(self) -> tuple[str | None, FaultKind]:
        """The tool to break (None when no task offers one) and how."""
        tool = self.query_one("#fault-tool", Select).value
        kind = self.query_one("#fault-kind", Select).value
        if kind not in FAULT_KINDS:
            raise AahError(f"unknown fault {kind!r}: use one of {', '.join(FAULT_KINDS)}")
        return (None if tool is Select.NULL else str(tool)), kind  # kind: checked above

    def chosen_task(self) -> TuiTask | None:
        """The task the controls name, or None when none is chosen yet.

        Raises:
            AahError: the task cannot be built (missing endpoint, no benchmark data).
        """
        if self.source == "demo":
            name = self.query_one("#demo-task", Select).value
            return demo_choice(demo_task(str(name)), self.registry)
        if self.source == "benchmark":
            chosen = self.query_one("#bench-task", Select).value
            task = next((t for t in self.bench_tasks if t.id == chosen), None)
            if task is None and not self.bench_tasks:
                raise AahError(self.bench_problem or "the benchmark tasks are still loading…")
            return benchmark_choice(task, self.registry) if task else None
        text = self.query_one("#free-query", Input).value
        return free_text_choice(text, self.registry) if text.strip() else None

    # -- what is shown --------------------------------------------------------

    def show_task(
        self, task: TuiTask | None, problem: str = "", broken: Sequence[str] = ()
    ) -> None:
        """Name the chosen task's tools (or the problem) and offer them for breaking."""
        note = problem or (f"tools: {task.tools_line}" if task else "")
        self.query_one("#task-note", Static).update(note)
        names = list(dict.fromkeys((task.tool_names if task else []) + list(broken)))
        select = self.query_one("#fault-tool", Select)
        current = select.value
        select.set_options([(name, name) for name in names])
        if names:
            select.value = current if current in names else names[0]

    def show_faults(self, faults: dict[str, FaultKind]) -> None:
        """List the broken tools."""
        lines = [f"✗ {name} → {kind}" for name, kind in faults.items()]
        self.query_one("#fault-list", Static).update("\n".join(lines) or "no tool is broken")

    def freeze(self, running: bool) -> None:
        """Freeze the session's controls while it runs; faults stay live."""
        for selector in _SESSION_CONTROLS:
            self.query_one(selector).disabled = running

    def watch_source(self, source: TaskSource) -> None:
        """Show the chosen source's controls only; load the benchmark on first use."""
        for box, shown in _BOXES.items():
            self.query_one(box).display = source == shown
        if source == "benchmark" and not self._bench_requested:
            # Thousands of tasks are parsed only for someone who wants them.
            self._bench_requested = True
            self._load_benchmark()
        self.post_message(self.ChoiceChanged())

    def _show_model_note(self) -> None:
        scripted = self.model_choice == "scripted"
        note = SCRIPTED_LABEL if scripted else "a real model: its answers are its own"
        self.query_one("#model-note", Static).update(note)

    # -- benchmark tasks ------------------------------------------------------

    @work(thread=True, group="benchmark")
    def _load_benchmark(self) -> None:
        tasks, problem = load_benchmark(self.data)
        self.app.call_from_thread(self._benchmark_loaded, tasks, problem)

    def _benchmark_loaded(self, tasks: list[Task], problem: str) -> None:
        self.bench_tasks, self.bench_problem = tasks, problem
        self.query_one("#bench-task", Select).prompt = (
            "choose a task" if tasks else "no benchmark data"
        )
        self._fill_bench_tasks()
        self.post_message(self.ChoiceChanged())

    def _fill_bench_tasks(self) -> None:
        setting = self.query_one("#bench-setting", Select).value
        options = [
            (f"{t.query_id}: {' '.join(t.query.split())[:60]}", t.id)
            for t in self.bench_tasks
            if t.setting == setting
        ]
        select = self.query_one("#bench-task", Select)
        select.set_options(options)
        if options:
            select.value = options[0][1]

    # -- control events -------------------------------------------------------

    @on(Select.Changed, "#source")
    def on_source_changed(self, event: Select.Changed) -> None:
        """Switch between demo, benchmark and free-text tasks."""
        self.source = event.value  # type: ignore[assignment]

    @on(Select.Changed, "#demo-task, #bench-task")
    @on(Input.Changed, "#free-query")
    def on_task_changed(self) -> None:
        """Another task was chosen, or the request was edited."""
        self.post_message(self.ChoiceChanged())

    @on(Select.Changed, "#bench-setting")
    def on_setting_changed(self) -> None:
        """List the chosen setting's tasks."""
        self._fill_bench_tasks()

    @on(Select.Changed, "#model")
    def on_model_changed(self) -> None:
        """Say which model will answer."""
        self._show_model_note()
