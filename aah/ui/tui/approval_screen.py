"""The dialog for a call to approve: a approve, e edit, r reject, s respond, t terminate.

Shown for queue requests of kind ``approval``, as ``AskHumanScreen`` is for
questions, with the same claims and "later" (Esc). An edit is the arguments
as JSON, checked against the endpoint's parameters before it is sent: an
invalid one is refused here, with the reason, and never reaches the runner.
The dialog returns a typed :class:`~aah.desk.Decision`, signed by the annotator.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, Static

from aah.bounds import OutOfBounds, parse_json
from aah.desk import Decision, approval_context, rule_words
from aah.events import ApprovalDecision
from aah.store import HumanRequestRecord
from aah.terminal_text import printable
from aah.tools import ParameterSpec
from aah.tools.calls import CallChecker, arguments_models
from aah.ui.tui.screens import HELP_KEY, AskHumanScreen, describe_context, own_keys_first

# What the dialog returns: the decision, an edit's arguments, a reason.
_Mode = Literal["choose", "edit", "reject", "respond", "terminate"]


class ApproveCallScreen(ModalScreen[Decision]):
    """A tool call to approve, edit, reject, respond to (give its result), or to terminate."""

    BINDINGS = [
        Binding("a", "approve", "Approve"),
        Binding("e", "edit", "Edit"),
        Binding("r", "reject", "Reject"),
        Binding("s", "respond", "Respond"),
        Binding("t", "terminate", "Terminate"),
        Binding("escape", "back", "Back / later"),
        HELP_KEY,
    ]

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys F1 and the footer list: the dialog's own first (``own_keys_first``)."""
        return own_keys_first(self, super().active_bindings)

    def __init__(
        self, request: HumanRequestRecord, where: str = "", *, decided_by: str = ""
    ) -> None:
        """Show ``request`` (kind ``approval``); ``where`` names its setting and task.

        ``decided_by`` (the annotator) signs the :class:`~aah.desk.Decision` the dialog returns.
        """
        super().__init__()
        self.request = request
        self.decided_by = decided_by
        self.where = where
        self.context = approval_context(request.context)
        self.call = self.context.call
        self.mode: _Mode = "choose"
        self.opened = time.monotonic()

    @property
    def seconds(self) -> float:
        """How long the dialog has been open."""
        return time.monotonic() - self.opened

    def compose(self) -> ComposeResult:
        """The call, why it needs approval, the context, and a box for an edit or a reason."""
        tool = self.call.tool or "?"
        arguments = json.dumps(self.call.arguments, ensure_ascii=False)
        with Vertical(id="ask-dialog"):
            title = "Approve this call?" + (f" ({printable(self.where)})" if self.where else "")
            yield Label(title, id="ask-title")
            line = f"{self.call.method} {tool} {arguments}".strip()
            rule = self.call.rule
            shown = line + (f"\n{rule_words(rule)}" if rule else "")
            yield Static(Text(printable(shown)), id="ask-question")
            with VerticalScroll(id="ask-context"):
                yield Static(describe_context(self.context))
            box = Input(id="ask-answer")
            box.display = False
            yield box
            keys = "a approve · e edit · r reject · s respond · t terminate · Esc later"
            yield Label(keys, id="approve-keys")
        yield Footer()

    def action_approve(self) -> None:
        """Let the call run as proposed."""
        self._decide("approve")

    def action_edit(self) -> None:
        """Open the arguments as JSON for editing (Enter sends them once valid)."""
        arguments = json.dumps(self.call.arguments, ensure_ascii=False)
        self._open_box("edit", arguments, "The arguments as JSON (Enter sends, Esc back)")

    def action_reject(self) -> None:
        """Ask for an optional reason (Enter rejects)."""
        self._open_box("reject", "", "Why (optional; the agent reads it). Enter rejects")

    def action_respond(self) -> None:
        """Ask for the result the agent reads instead of the call's (Enter sends it)."""
        self._open_box("respond", "", "The result the agent reads; the call does not run")

    def action_terminate(self) -> None:
        """Ask for an optional reason (Enter ends the session)."""
        self._open_box("terminate", "", "Why (optional). Enter terminates the session")

    def action_back(self) -> None:
        """From a box, back to the choice; otherwise close and decide later."""
        if self.mode != "choose":
            self.mode = "choose"
            self.query_one("#ask-answer", Input).display = False
            self.set_focus(None)
            return
        self.app.post_message(AskHumanScreen.PutAside(self.request.id))
        self.app.pop_screen()

    def _open_box(self, mode: _Mode, value: str, placeholder: str) -> None:
        self.mode = mode
        box = self.query_one("#ask-answer", Input)
        box.value, box.placeholder, box.display = value, placeholder, True
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the box: send the edit (if valid), the rejection or the termination."""
        event.stop()
        text = event.value.strip()
        if self.mode == "edit":
            arguments, problem = self._checked(text)
            if problem is not None:
                self.notify(f"Refused: {problem}", severity="error")
                return
            self._decide("edit", arguments=arguments)
        elif self.mode == "respond":
            if not text:
                self.notify("Type the result the agent reads (or Esc to go back)", severity="error")
                return
            self._decide("respond", response=text)
        elif self.mode == "reject" or self.mode == "terminate":
            self._decide(self.mode, reason=text)

    def _decide(
        self,
        decision: ApprovalDecision,
        *,
        arguments: dict[str, Any] | None = None,
        reason: str = "",
        response: str = "",
    ) -> None:
        """Close the dialog with the typed decision, signed and timed."""
        self.dismiss(
            Decision(
                decision=decision,
                arguments=arguments,
                reason=reason,
                response=response,
                decided_by=self.decided_by,
                seconds=self.seconds,
            )
        )

    def _checked(self, text: str) -> tuple[dict[str, Any], str | None]:
        """The edited arguments, and why they cannot run (None when they can)."""
        try:
            arguments = parse_json(text, "the edit")
        except json.JSONDecodeError as exc:
            return {}, f"not JSON ({exc.msg} at column {exc.colno})"
        except OutOfBounds as exc:
            return {}, str(exc)
        if not isinstance(arguments, dict):
            return {}, 'the arguments are a JSON object, e.g. {"city": "Oslo"}'
        tool = self.call.tool
        parameters = [ParameterSpec.model_validate(p) for p in self.call.parameters]
        offered = {tool: parameters}
        verdict = CallChecker(offered, seen=[], models=arguments_models(offered)).check(
            tool, arguments
        )
        return arguments, None if verdict.ok else " ".join(verdict.feedback.split())
