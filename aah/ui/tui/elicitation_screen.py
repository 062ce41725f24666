"""The dialog for an MCP server's question: a form built from its schema, or a link and "done".

Shown for queue requests of kind ``elicitation``, as ``AskHumanScreen`` is
for the agent's questions, with the same claims and "later" (Esc). The
server's name is shown as who asks. A form has one widget a field (text
or a number in a box, yes/no as a checkbox, an enum as a choice, several
options as a list); what the person gives is checked against the form
before it is sent, and a value that does not fit is refused in one line
naming the field. A link is shown, never opened: the person opens it
themselves and says done.

Keys (the boxes take letters): ctrl+s accept (or done), ctrl+r decline,
ctrl+t cancel, Esc later. Enter in a box accepts too.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, Static

from aah.desk import (
    ContentInvalid,
    ElicitationRequest,
    ElicitationResult,
    check_content,
    link_words,
)
from aah.store import HumanRequestRecord
from aah.terminal_text import printable
from aah.ui.tui.form_fields import field_label, field_widget, form_values
from aah.ui.tui.screens import HELP_KEY, AskHumanScreen, own_keys_first

FORM_KEYS = "ctrl+s accept · ctrl+r decline · ctrl+t cancel · Esc later"
LINK_KEYS = "ctrl+s done · ctrl+r decline · ctrl+t cancel · Esc later"

# A long list of offered tools: enough to recognise the agent, on a line or two.
MAX_TOOLS_SHOWN = 30


class ElicitationScreen(ModalScreen[ElicitationResult]):
    """An MCP server's form or link; returns accept (with content), decline or cancel."""

    BINDINGS = [
        Binding("ctrl+s", "accept", "Accept", priority=True),
        Binding("ctrl+r", "decline", "Decline", priority=True),
        Binding("ctrl+t", "cancel", "Cancel", priority=True),
        Binding("escape", "later", "Later"),
        HELP_KEY,
    ]

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys F1 and the footer list: the dialog's own first (``own_keys_first``)."""
        return own_keys_first(self, super().active_bindings)

    def __init__(self, request: HumanRequestRecord, where: str = "") -> None:
        """Show ``request`` (kind ``elicitation``); ``where`` names its setting and task."""
        super().__init__()
        self.request = request
        self.where = where
        self.elicitation = ElicitationRequest.model_validate(request.context)
        self.opened = time.monotonic()

    @property
    def seconds(self) -> float:
        """How long the dialog has been open."""
        return time.monotonic() - self.opened

    def compose(self) -> ComposeResult:
        """Who asks and what, then the form's fields or the link."""
        asked = self.elicitation
        with Vertical(id="ask-dialog"):
            title = f"MCP server {asked.asker} asks" + (f" ({self.where})" if self.where else "")
            yield Label(Text(printable(title)), id="ask-title")
            yield Static(Text(printable(asked.message)), id="ask-question")
            if asked.tools:
                given = ", ".join(asked.tools[:MAX_TOOLS_SHOWN])
                more = len(asked.tools) - MAX_TOOLS_SHOWN
                given += f" and {more:,} more" if more > 0 else ""
                yield Static(Text(f"The agent was given: {given}"), id="elicit-tools")
            with VerticalScroll(id="elicit-fields"):
                if asked.mode == "url":
                    yield Static(Text(link_words(asked.url or "")), id="elicit-url")
                for index, field in enumerate(asked.fields):
                    yield Label(Text(printable(field_label(field))), classes="elicit-label")
                    yield field_widget(field, f"elicit-{index}")
            yield Label("", id="elicit-problem")
            yield Label(LINK_KEYS if asked.mode == "url" else FORM_KEYS, id="elicit-keys")
        yield Footer()

    def on_mount(self) -> None:
        """The first field takes the keys: a form costs its typing and ctrl+s."""
        if self.elicitation.fields:
            self.query_one("#elicit-0").focus()

    def values(self) -> dict[str, Any]:
        """What the person gave, field by field (an empty box is left out)."""
        return form_values(self, self.elicitation.fields, "elicit")

    def action_accept(self) -> None:
        """Send the form (once it fits) or say the link is done."""
        if self.elicitation.mode == "url":
            self.dismiss(ElicitationResult(action="accept"))
            return
        try:
            content = check_content(self.elicitation, self.values())
        except ContentInvalid as exc:
            self.query_one("#elicit-problem", Label).update(Text(f"Not sent: {exc}"))
            return
        self.dismiss(ElicitationResult(action="accept", content=content))

    def action_decline(self) -> None:
        """Say no to the server."""
        self.dismiss(ElicitationResult(action="decline"))

    def action_cancel(self) -> None:
        """Dismiss the server's question without choosing."""
        self.dismiss(ElicitationResult(action="cancel"))

    def action_later(self) -> None:
        """Close it unanswered: it goes back to the queue for anyone."""
        self.app.post_message(AskHumanScreen.PutAside(self.request.id))
        self.app.pop_screen()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in a box sends the form."""
        event.stop()
        self.action_accept()
