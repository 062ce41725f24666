"""A tool call waiting for approval as the web page shows it, and the decision back.

No Gradio here. The call is shown as a form made from the endpoint's
parameters (``approval.parameters`` in the request's context, written by
``QueueApprover``): one field a parameter, typed, required ones marked,
enums as a choice, the proposed values filled in. The page script
(``page.js``) turns the keys, or the form's own buttons (one a decision,
each visible on every screen: a phone has no keys), into a decision (a
approve, e edit, r reject, s respond, t terminate) and sends it as JSON;
``read_decision`` checks it here. An edit
is checked against the endpoint's parameters as the runner checks it
(``CallChecker``), plus its enums: an invalid one is refused with one line
and never reaches the store. Every text from the request is escaped.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any

from aah.bounds import OutOfBounds, check_number, parse_json
from aah.desk import MAX_ANSWER_CHARS, DeskWorkflow, OpenedRequest, approval_context, rule_words
from aah.store import APPROVAL_DECISIONS, HumanRequestRecord
from aah.tools import ParameterSpec
from aah.tools.calls import CallChecker, enum_problem
from aah.ui.web.format import clip, plain

MAX_REASON_CHARS = 4_000
# A response is the tool's result as the agent reads it: as long as an answer may be.
MAX_RESPONSE_CHARS = MAX_ANSWER_CHARS
MAX_FIELD_CHARS = 20_000
# The whole decision the page sends: no more than a request to the app may bring.
MAX_DECISION_CHARS = 1_000_000


@dataclass(frozen=True)
class Decision:
    """A checked decision on one call, ready for ``SessionStore.humans.decide_approval``.

    Attributes:
        decision: ``approve``, ``edit``, ``reject``, ``respond`` or ``terminate``.
        arguments: An edit's arguments (None for the other decisions).
        reason: Why (a rejection's reason reaches the agent).
        response: A response's text: the result the agent reads, the call not run.
    """

    decision: str
    arguments: dict[str, Any] | None = None
    reason: str = ""
    response: str = ""


@dataclass(frozen=True)
class ProposedCall:
    """The call a request asks about, as ``QueueApprover`` stored it in its context."""

    tool: str
    method: str
    url: str
    arguments: dict[str, Any]
    parameters: list[ParameterSpec]
    rule: str = ""
    fallback: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, request: HumanRequestRecord) -> ProposedCall:
        """The call in ``request``'s context (fields a damaged context lacks left empty)."""
        call = approval_context(request.context).call
        arguments = dict(call.arguments)
        parameters = []
        for raw in call.parameters:
            try:
                parameters.append(ParameterSpec.model_validate(raw))
            except ValueError:
                continue  # a parameter this version cannot read: shown as an extra argument
        named = {p.name for p in parameters}
        return cls(
            tool=call.tool or "?",
            method=call.method,
            url=call.url,
            arguments=arguments,
            parameters=parameters,
            rule=call.rule,
            fallback=call.fallback,
            extra={k: v for k, v in arguments.items() if k not in named},
        )

    @property
    def summary(self) -> str:
        """The call on one line: ``POST local__book {"rooms": 2}``."""
        return f"{self.method} {self.tool} {json.dumps(self.arguments, ensure_ascii=False)}"


# -- the form ------------------------------------------------------------------


def call_html(request: HumanRequestRecord) -> str:
    """The call waiting in ``request`` as an HTML form, every text in it escaped.

    The fields are disabled until the page script opens them for an edit
    (``e``), so a key pressed by mistake changes nothing.
    """
    call = ProposedCall.of(request)
    head = (
        f'<p class="aah-call"><code>{html.escape(call.method)}</code>'
        f" <b>{html.escape(call.tool)}</b>"
        + (f' <span class="aah-url">{html.escape(call.url)}</span>' if call.url else "")
        + "</p>"
    )
    why = f'<p class="aah-rule">{html.escape(rule_words(call.rule))}</p>' if call.rule else ""
    fields = [_field_html(n, p, call.arguments) for n, p in enumerate(call.parameters)]
    if call.extra:
        extra = html.escape(json.dumps(call.extra, ensure_ascii=False))
        fields.append(
            f'<p class="aah-extra">Other arguments (kept as proposed): <code>{extra}</code></p>'
        )
    if not fields:
        fields.append('<p class="aah-extra">This call takes no arguments.</p>')
    return (
        f'<div id="approval-call" tabindex="-1" data-request="{html.escape(request.id)}">'
        f"{head}{why}"
        f'<div id="approval-fields">{"".join(fields)}</div>'
        '<div id="approval-reason-box" hidden>'
        '<label for="approval-reason" id="approval-reason-label">Why (optional; the agent'
        " reads it)</label>"
        f'<textarea id="approval-reason" rows="2" maxlength="{MAX_REASON_CHARS}"></textarea>'
        "</div>"
        '<p id="approval-note" role="alert" hidden></p>'
        f"{_BUTTONS}"
        "</div>"
    )


# One button a decision, each the key of the same letter (page.js): a phone has no keys.
# While an edit, a reason or a result is open, the button of that decision sends it
# (its label says so) and Later goes back to the choice.
_BUTTONS = (
    '<div id="approval-actions" class="aah-actions">'
    + "".join(
        f'<button type="button" data-approval="{key}" id="approval-{name}"{primary}>'
        f"{label}</button>"
        for key, name, label in (
            ("a", "approve", "Approve (a)"),
            ("e", "edit", "Edit (e)"),
            ("r", "reject", "Reject (r)"),
            ("s", "respond", "Respond (s)"),
            ("t", "terminate", "Terminate (t)"),
            ("escape", "back", "Later (Esc)"),
        )
        for primary in (' class="aah-primary"' if key == "a" else "",)
    )
    + "</div>"
)


def _field_html(number: int, parameter: ParameterSpec, proposed: dict[str, Any]) -> str:
    name = html.escape(parameter.name, quote=True)
    ident = f"approval-arg-{number}"
    kind = parameter.type + (f" of {parameter.items_type}" if parameter.items_type else "")
    if parameter.enum:
        kind = f"one of {len(parameter.enum)}"
    label = (
        f'<label for="{ident}"><code>{html.escape(parameter.name)}</code>'
        f' <span class="aah-type">{html.escape(kind)}</span>'
        + (' <span class="aah-required">required</span>' if parameter.required else "")
        + "</label>"
    )
    given = parameter.name in proposed
    value = proposed.get(parameter.name)
    common = f'id="{ident}" data-arg="{name}" disabled'
    if parameter.enum:
        options = ['<option value="">(not given)</option>']
        for choice in parameter.enum:
            encoded = html.escape(json.dumps(choice, ensure_ascii=False), quote=True)
            picked = " selected" if given and choice == value else ""
            shown = html.escape(choice if isinstance(choice, str) else json.dumps(choice))
            options.append(f'<option value="{encoded}"{picked}>{shown}</option>')
        control = f'<select {common} data-enum="1">{"".join(options)}</select>'
    elif parameter.type == "boolean":
        options = ['<option value="">(not given)</option>']
        for word in ("true", "false"):
            picked = " selected" if given and value is (word == "true") else ""
            options.append(f'<option value="{word}"{picked}>{word}</option>')
        control = f"<select {common}>{''.join(options)}</select>"
    else:
        text = "" if not given or value is None else _as_text(parameter, value)
        escaped = html.escape(text, quote=True)
        if parameter.type in ("object", "array") or "\n" in text:
            lines = min(8, max(2, text.count("\n") + 1))
            control = f'<textarea {common} rows="{lines}">{html.escape(text)}</textarea>'
        else:
            mode = {"integer": "numeric", "number": "decimal"}.get(parameter.type, "text")
            control = f'<input type="text" inputmode="{mode}" {common} value="{escaped}">'
    about = (
        f'<small class="aah-about">{html.escape(clip(parameter.description, 200))}</small>'
        if parameter.description
        else ""
    )
    return f'<div class="aah-field" data-arg="{name}">{label}{control}{about}</div>'


def _as_text(parameter: ParameterSpec, value: Any) -> str:
    if parameter.type == "string" and isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, indent=1 if len(str(value)) > 60 else None)
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


# -- the decision back ---------------------------------------------------------


def read_decision(request: HumanRequestRecord, sent: str) -> Decision:
    """The decision the page sent for ``request``, checked; an edit's arguments typed.

    ``sent`` is JSON: ``{"decision": ..., "fields": {name: text}, "reason": ...}``.

    Raises:
        ValueError: The decision cannot be used: an unknown one, a reason
            too long, or an edit whose arguments would not run (one line
            naming the field and what it needs).
    """
    try:
        data = parse_json(sent, "the decision", max_chars=MAX_DECISION_CHARS)
    except OutOfBounds:
        raise
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("decision") not in APPROVAL_DECISIONS:
        raise ValueError("press a (approve), e (edit), r (reject), s (respond) or t (terminate)")
    decision = str(data["decision"])
    reason = data.get("reason")
    reason = reason.strip() if isinstance(reason, str) else ""
    if len(reason) > MAX_REASON_CHARS:
        raise ValueError(f"shorten the reason to at most {MAX_REASON_CHARS:,} characters")
    if decision == "approve":
        return Decision("approve")  # runs as proposed: nothing typed goes with it
    if decision == "respond":
        response = data.get("response")
        response = response.strip() if isinstance(response, str) else ""
        if not response:
            raise ValueError("type the result the agent reads (s), then send it")
        if len(response) > MAX_RESPONSE_CHARS:
            raise ValueError(f"shorten the result to at most {MAX_RESPONSE_CHARS:,} characters")
        return Decision("respond", response=response)
    if decision != "edit":
        return Decision(decision, None, reason)
    fields = data.get("fields")
    if not isinstance(fields, dict):
        raise ValueError("the edit came without its fields: press e and edit again")
    call = ProposedCall.of(request)
    arguments = edited_arguments(call, fields)
    problem = edit_problem(call, arguments)
    if problem is not None:
        raise ValueError(problem)
    if _same(arguments, call.arguments):
        # Nothing changed: the call runs as proposed, so it is stored (and counted) as approved.
        return Decision("approve")
    return Decision("edit", arguments, reason)


def _same(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether two calls' arguments are the same JSON (``1`` and ``true`` are not)."""
    return json.dumps(one, sort_keys=True) == json.dumps(other, sort_keys=True)


def edited_arguments(call: ProposedCall, fields: dict[str, Any]) -> dict[str, Any]:
    """The arguments the form's ``fields`` (name to the text typed) stand for.

    An empty field leaves its argument out (a proposed null stays null);
    the arguments the form does not show stay as proposed.

    Raises:
        ValueError: A field's text is no value of its type (one line).
    """
    arguments = dict(call.extra)
    for parameter in call.parameters:
        raw = fields.get(parameter.name, "")
        if raw is None:
            raw = ""
        if not isinstance(raw, str):
            raise ValueError(f"{parameter.name}: the page sent no text for it; reload the page")
        if len(raw) > MAX_FIELD_CHARS:
            raise ValueError(f"{parameter.name}: at most {MAX_FIELD_CHARS:,} characters")
        if not raw.strip():
            if parameter.name in call.arguments and call.arguments[parameter.name] is None:
                arguments[parameter.name] = None
            continue
        arguments[parameter.name] = _typed(parameter, raw)
    return arguments


def _typed(parameter: ParameterSpec, raw: str) -> Any:
    """The value of ``parameter`` that ``raw`` (typed or chosen in the form) stands for."""
    name, text = parameter.name, raw.strip()
    shown = clip(text, 40)
    if parameter.enum:
        try:
            value = parse_json(text, name)
        except OutOfBounds:
            raise
        except ValueError:
            value = text  # a value typed by hand, not chosen
        if value not in parameter.enum:
            choices = ", ".join(
                clip(c if isinstance(c, str) else json.dumps(c), 30) for c in parameter.enum[:8]
            )
            raise ValueError(f"{name}: choose one of {choices}, not “{shown}”")
        return value
    if parameter.type == "string":
        return raw
    if parameter.type in ("integer", "number"):
        return check_number(text, name, integer=parameter.type == "integer")
    if parameter.type == "boolean":
        if text.lower() not in ("true", "false"):
            raise ValueError(f"{name}: true or false, not “{shown}”")
        return text.lower() == "true"
    try:
        value = parse_json(text, name)
    except OutOfBounds:
        raise
    except ValueError as exc:
        where = (
            f" ({exc.msg} at column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        )
        example = '["a", "b"]' if parameter.type == "array" else '{"key": "value"}'
        raise ValueError(f"{name}: JSON {parameter.type}, e.g. {example}{where}") from None
    wanted = list if parameter.type == "array" else dict
    if not isinstance(value, wanted):
        example = '["a", "b"]' if parameter.type == "array" else '{"key": "value"}'
        raise ValueError(f"{name}: JSON {parameter.type}, e.g. {example}")
    return value


def edit_problem(call: ProposedCall, arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` cannot run as ``call``'s tool (one line), or None when they can.

    The runner's own check (``CallChecker``: required, types, names), told
    in a person's words, and the enums, which that check leaves to the API.
    """
    offered = {call.tool: call.parameters}
    verdict = CallChecker(offered).check(call.tool, arguments)
    if not verdict.ok:
        # The checker speaks to the model: its first sentence names the problem.
        first = " ".join(verdict.feedback.split()).split(". Valid arguments")[0]
        return first.removeprefix(f"{call.tool} ").rstrip(".")
    return enum_problem(call.parameters, arguments)


def submit_decision(
    workflow: DeskWorkflow, annotator: str, opened: OpenedRequest, decision: Decision
) -> str:
    """Store ``annotator``'s decision (``DeskWorkflow.decide``); say in Markdown what came of it.

    Raises:
        LookupError: The request is gone.
    """
    sent = workflow.decide(
        annotator,
        opened,
        decision.decision,
        arguments=decision.arguments,
        reason=decision.reason,
        response=decision.response,
    )
    if sent.outcome == "closed":
        return f"{plain(_about_call(sent.closed or ''))}: your decision was not used."
    if sent.outcome == "repeat":
        return "You already decided on this call; your first decision stands."
    if sent.outcome != "settled":
        return "Someone decided on this call first; yours is kept for agreement."
    call = ProposedCall.of(sent.request)
    return stored_note(call, decision)


def stored_note(call: ProposedCall, decision: Decision) -> str:
    """What was stored for ``call``, in one Markdown line: the arguments that run, the reason."""
    tool = f"**{plain(clip(call.tool, 40))}**"
    if decision.decision == "approve":
        return f"Approved {tool} with {_arguments(call.arguments)} as proposed: the agent goes on."
    if decision.decision == "edit":
        ran = decision.arguments if decision.arguments is not None else call.arguments
        return f"Edited {tool}: it runs with {_arguments(ran)}; the agent goes on."
    why = f" (reason: “{plain(clip(decision.reason, 80))}”)" if decision.reason else ""
    if decision.decision == "reject":
        return f"Rejected {tool}{why}: the call does not run; the agent goes on."
    if decision.decision == "respond":
        said = plain(clip(decision.response, 80))
        return f"Responded in place of {tool}: the agent reads “{said}”; the call does not run."
    return f"Terminated the session at {tool}{why}: the call does not run."


def _arguments(arguments: dict[str, Any]) -> str:
    # No code span: the escapes that keep it inert would show in one.
    return plain(clip(json.dumps(arguments, ensure_ascii=False), 80))


def _about_call(reason: str) -> str:
    # The store's words are about questions; here a call waits.
    return reason.replace("this question's", "this call's").replace("answered instead", "decided")
