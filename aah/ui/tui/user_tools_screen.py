"""The person's own tools (a τ² user's phone) in the terminal app: buttons, small forms, results.

A question whose context carries the person's tools (``aah.desk.UserToolsContext``)
shows them in its dialog (:class:`UserToolsPanel`): the calls made since the turn
began with their results, a button for each tool, and the tools the desk cannot
call. A tool without arguments is called by its button; one with arguments opens
:class:`UserToolFormScreen`, its form built from the tool's schema by the
elicitation dialog's widgets (an enum a choice, yes/no a checkbox). Either way
the call is checked against the tool's form first (``aah.desk.check_user_call``),
so a value that does not fit is one line and nothing leaves the dialog; a call
that fits goes out as a :class:`ToolPress`, with the words typed in the answer
box, which come back with the call's result.

Keys: Tab reaches the tools, Enter presses one; in a tool's form ctrl+s calls it
and Esc goes back to the question, the typed words untouched.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static

from aah.desk import ContentInvalid, UserTool, UserToolsContext, check_user_call
from aah.terminal_text import printable
from aah.ui.tui.form_fields import field_label, field_widget, form_values

FORM_KEYS = "ctrl+s call it · Esc back to the question"


class ToolPress(NamedTuple):
    """A press of one of the person's tools: checked, ready for ``DeskWorkflow.called``."""

    tool: str
    values: dict[str, Any]
    draft: str


def results_text(tools: UserToolsContext) -> Text:
    """The calls made since the turn began and what each gave, as text (never markup)."""
    text = Text()
    for made in tools.results:
        text.append(f"{printable(made.tool)}()", style="bold")
        text.append(" → ")
        style = "red" if made.error else ""
        text.append(" ".join(printable(made.text).split())[:300] + "\n", style=style)
    return text


class UserToolsPanel(Vertical):
    """The person's tools beside a question; posts :class:`UserToolsPanel.Pressed`."""

    class Pressed(Message):
        """A tool's button was pressed."""

        def __init__(self, tool: UserTool) -> None:
            super().__init__()
            self.tool = tool

    def __init__(self, tools: UserToolsContext) -> None:
        super().__init__(id="phone")
        self.tools = tools

    def compose(self) -> ComposeResult:
        """The results so far, then a button a tool, then what the desk cannot call."""
        yield Label(Text("Your own tools (Tab to reach them, Enter to press)", style="bold"))
        if self.tools.results:
            yield Static(results_text(self.tools), id="phone-results")
        if self.tools.calls_left <= 0:
            yield Label("No more calls in this turn: write your message.", id="phone-spent")
        else:
            with VerticalScroll(id="phone-scroll"), Grid(id="phone-buttons"):
                for index, tool in enumerate(self.tools.tools):
                    label = f"{tool.name}…" if tool.fields else tool.name
                    yield Button(Text(printable(label)), id=f"phone-{index}", compact=True)
        if self.tools.unusable:
            left = "Not callable here: " + "; ".join(self.tools.unusable)
            yield Label(Text(printable(left)), id="phone-unusable")
        yield Label("", id="phone-problem")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()  # the question's own buttons (Send, Decline, Later) are not these
        index = int((event.button.id or "phone--1").removeprefix("phone-"))
        if 0 <= index < len(self.tools.tools):
            self.post_message(self.Pressed(self.tools.tools[index]))

    def refuse(self, why: str) -> None:
        """Say in one line why a call was not made."""
        self.query_one("#phone-problem", Label).update(Text(f"Not called: {why}"))


def checked_press(tools: UserToolsContext, tool: UserTool, values: Any, draft: str) -> ToolPress:
    """A press of ``tool`` with ``values``, checked against its form.

    Raises:
        ContentInvalid: it does not fit; one line naming the field.
    """
    check_user_call(tools, tool.name, values, draft)
    return ToolPress(tool.name, dict(values), draft)


class UserToolFormScreen(ModalScreen[ToolPress | None]):
    """One tool's form; returns the checked press, or None when the person goes back."""

    BINDINGS = [
        Binding("ctrl+s", "call", "Call it", priority=True),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, tools: UserToolsContext, tool: UserTool, draft: str) -> None:
        super().__init__()
        self.tools = tools
        self.tool = tool
        self.draft = draft

    def compose(self) -> ComposeResult:
        """The tool, what it does, its fields, a Call button."""
        with Vertical(id="ask-dialog"):
            yield Label(Text(printable(self.tool.name)), id="ask-title")
            if self.tool.description:
                yield Static(Text(printable(self.tool.description)), id="phone-about")
            with VerticalScroll(id="elicit-fields"):
                for index, field in enumerate(self.tool.fields):
                    yield Label(Text(printable(field_label(field))), classes="elicit-label")
                    yield field_widget(field, f"phone-field-{index}")
            yield Label("", id="phone-form-problem")
            yield Button("Call", variant="primary", id="phone-call")
            yield Label(FORM_KEYS, classes="hint")
        yield Footer()

    def on_mount(self) -> None:
        """The first field takes the keys."""
        self.query_one("#phone-field-0").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Call, by button."""
        event.stop()
        self.action_call()

    def action_call(self) -> None:
        """Check the form against the tool and send the press; a misfit is one line."""
        values = form_values(self, self.tool.fields, "phone-field")
        try:
            press = checked_press(self.tools, self.tool, values, self.draft)
        except ContentInvalid as exc:
            self.query_one("#phone-form-problem", Label).update(Text(f"Not called: {exc}"))
            return
        self.dismiss(press)

    def action_back(self) -> None:
        """Back to the question, nothing called."""
        self.dismiss(None)
