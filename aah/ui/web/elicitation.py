"""An MCP server's question as the web page shows it, and the person's result back.

No Gradio here. A request of kind ``elicitation`` opens where a call to
approve does, as a form built from the server's schema (the server's name
as the asker): one field a property, typed, required ones marked, an enum
as a choice, several options as a list, yes/no as a checkbox. In URL mode
the page shows the address as text, never as a link (the person copies it
into a browser; aah never opens it), and a Done button. The page script
(``page.js``) sends what the person chose as JSON (Ctrl+Enter accepts, Esc
puts it aside); ``read_elicitation`` checks it against the form, so content
that does not fit is refused with one line naming the field (the page shows
it beside that field) and never stored. Every text from the server is
escaped.
"""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import urlsplit

from aah.bounds import OutOfBounds, parse_json
from aah.desk import (
    ContentInvalid,
    DeskWorkflow,
    ElicitationField,
    ElicitationRequest,
    ElicitationResult,
    OpenedRequest,
    check_content,
)
from aah.store import HumanRequestRecord
from aah.ui.web.answered import content_text
from aah.ui.web.format import clip, plain

# The whole result the page sends: no more than a form of bounded fields needs.
MAX_RESULT_CHARS = 200_000
_DONE = {"accept": "Accepted", "decline": "Declined", "cancel": "Cancelled"}
ELICIT_KEYS = (
    "Keys: <b>Ctrl+Enter</b> accept (sends the form) · <b>Tab</b> next field ·"
    " <b>Esc</b> later (<b>u</b> undoes) · Decline and Cancel by their buttons"
)


def elicitation_html(record: HumanRequestRecord) -> str:
    """The server's question as an HTML form (or link), every text escaped."""
    request = ElicitationRequest.model_validate(record.context)
    asker = html.escape(request.asker)
    parts = [
        f'<div id="elicit-form" data-mode="{request.mode}"'
        f' data-request="{html.escape(record.id, quote=True)}">',
        f'<p id="elicit-asker"><b>MCP server {asker} asks</b></p>',
        f'<p id="elicit-message">{html.escape(request.message)}</p>',
    ]
    if request.mode == "url":
        # Shown as text, never a link: a server's URL is untrusted, so a stray tap (a
        # phone) must not open it; the person reads where it leads (its host in bold)
        # and copies it into a browser themselves. MCP asks clients never to open it.
        url = request.url or ""
        host = urlsplit(url).hostname or ""
        parts.append(
            '<p id="elicit-link">It asks you to open this address yourself'
            f" (it leads to <b>{html.escape(host or 'an unnamed host')}</b>); copy it into"
            f' your browser:</p><p><code id="elicit-url">{html.escape(url)}</code></p>'
        )
    else:
        parts.append('<div id="elicit-fields">')
        parts += [field_html(f, f"elicit-{index}") for index, f in enumerate(request.fields)]
        parts.append("</div>")
    accept = "Done" if request.mode == "url" else "Accept"
    parts += [
        '<p id="elicit-note" role="alert" hidden></p>',
        f'<p id="elicit-keys">{ELICIT_KEYS}</p>',
        '<div id="elicit-buttons" class="aah-actions">',
        f'<button type="button" data-elicit="accept" id="elicit-accept" class="aah-primary">'
        f"{accept} (Ctrl+Enter)</button>",
        '<button type="button" data-elicit="decline" id="elicit-decline">Decline</button>',
        '<button type="button" data-elicit="cancel" id="elicit-cancel">Cancel</button>',
        '<button type="button" data-elicit="later" id="elicit-later">Later (Esc)</button>',
        "</div></div>",
    ]
    return "\n".join(parts)


def field_html(field: ElicitationField, ident: str) -> str:
    """One field of a form as HTML (its control has id ``ident``), every text escaped.

    The page script reads each control by its ``data-field`` (the field's name).
    """
    name = html.escape(field.name, quote=True)
    label = html.escape(field.label) + (" *" if field.required else "")
    about = f'<span class="aah-about">{html.escape(field.description)}</span>'
    common = f'id="{ident}" data-field="{name}" data-kind="{field.kind}"'
    if field.kind == "boolean":
        checked = " checked" if field.default is True else ""
        control = f'<input type="checkbox" {common}{checked}>'
    elif field.kind == "enum":
        chosen = field.default if isinstance(field.default, str) else None
        options = "".join(
            f'<option value="{html.escape(v, quote=True)}"{" selected" if v == chosen else ""}>'
            f"{html.escape(field.option_title(v))}</option>"
            for v in field.options
        )
        blank = "" if field.multiple else '<option value=""></option>'
        multiple = " multiple" if field.multiple else ""
        control = f"<select {common}{multiple}>{blank}{options}</select>"
    elif field.kind in ("integer", "number"):
        # A text box, as the approval form has: a browser's number box sends nothing
        # for what it cannot read (400 digits), where aah's one reader says why.
        mode = "numeric" if field.kind == "integer" else "decimal"
        value = "" if field.default is None else html.escape(str(field.default), quote=True)
        hint = _range(field)
        placeholder = f' placeholder="{html.escape(hint, quote=True)}"' if hint else ""
        control = f'<input type="text" inputmode="{mode}" {common}{placeholder} value="{value}">'
    else:
        kind = {"email": "email", "date": "date", "uri": "url"}.get(field.format or "", "text")
        value = "" if field.default is None else html.escape(str(field.default), quote=True)
        control = f'<input type="{kind}" {common} value="{value}">'
    shown = html.escape(field.label, quote=True)
    return (
        f'<div class="aah-field" data-label="{shown}"><label for="{ident}">{label}</label>'
        f"{control}{about}</div>"
    )


def _range(field: ElicitationField) -> str:
    """A number field's bounds as its box's hint ("1 to 14", "at least 0"), or nothing."""
    low, high = field.minimum, field.maximum
    if low is not None and high is not None:
        return f"{low:g} to {high:g}"
    if low is not None:
        return f"at least {low:g}"
    return f"at most {high:g}" if high is not None else ""


def read_elicitation(record: HumanRequestRecord, sent: str) -> ElicitationResult:
    """The result the page sent (``{"action", "content"}``), checked against the form.

    Raises:
        ValueError: it is not a result, or its content does not fit the form;
            one line naming the field and what to give.
    """
    request = ElicitationRequest.model_validate(record.context)
    try:
        data: Any = parse_json(sent, "the result", max_chars=MAX_RESULT_CHARS)
    except OutOfBounds as exc:
        raise ValueError(f"{exc}; nothing was sent") from None
    except json.JSONDecodeError:
        raise ValueError("the page sent no result: press Accept, Decline or Cancel") from None
    if not isinstance(data, dict) or data.get("action") not in _DONE:
        raise ValueError("the page sent no result: press Accept, Decline or Cancel")
    action = data["action"]
    if action != "accept" or request.mode == "url":
        return ElicitationResult(action=action)
    content = data.get("content")
    if not isinstance(content, dict):
        raise ValueError("the form's values are missing: fill the form, then Accept")
    try:
        return ElicitationResult(action="accept", content=check_content(request, content))
    except ContentInvalid as exc:
        raise ValueError(str(exc)) from None


def submit_elicitation(
    workflow: DeskWorkflow,
    annotator: str,
    opened: OpenedRequest,
    result: ElicitationResult,
) -> str:
    """Store ``annotator``'s result (``DeskWorkflow.elicited``); say in Markdown what came of it.

    Raises:
        LookupError: The request is gone.
    """
    sent = workflow.elicited(annotator, opened, result)
    if sent.outcome == "closed":
        return f"{plain(sent.closed or '')}: your answer was not used."
    if sent.outcome == "repeat":
        return "You already answered this question; your first answer stands."
    if sent.outcome != "settled":
        return "Someone answered this question first; yours is kept for agreement."
    request = ElicitationRequest.model_validate(sent.request.context)
    # What was stored: the values sent, as the latest answers show them too.
    values = (
        f": {plain(clip(content_text(request, result.content), 120))}" if result.content else ""
    )
    return f"{_DONE[result.action]}: sent to MCP server {plain(request.asker)}{values}."
