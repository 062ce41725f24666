"""The person's own tools (a τ² user's phone) as the web page shows them, and a press back.

No Gradio here. A question whose context carries the person's tools
(``aah.desk.UserToolsContext``) shows them under the answer box: the calls
made since the turn began with their results, a button for each tool that
takes no arguments, and a small form for each that does (built from the
tool's schema by the elicitation form's :func:`field_html`: an enum as a
choice, yes/no as a checkbox, numbers in text boxes). The page script
(``page.js``) sends a press as JSON with the words typed in the answer box;
:func:`read_user_call` reads it within bounds, and ``DeskWorkflow.called``
checks the call against the tool's form before anything is stored: a value
that does not fit is one line, the form and the typed words left as they
were. Every text from the context is escaped.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from aah.bounds import OutOfBounds, parse_json
from aah.desk import UserTool, UserToolsContext, question_context
from aah.store import HumanRequestRecord
from aah.ui.web.elicitation import field_html
from aah.ui.web.format import clip, plain

# What a press may send: the tool, its form's values and the words typed (4,000 at most).
MAX_PRESS_CHARS = 100_000
_RESULT_SHOWN = 600


@dataclass(frozen=True)
class Press:
    """A press of one of the person's tools, as the page sent it (checked by the workflow)."""

    request_id: str
    tool: Any
    values: Any
    draft: Any


def user_tools_of(record: HumanRequestRecord | None) -> UserToolsContext | None:
    """The person's tools a question offers, if any."""
    if record is None or record.kind != "question":
        return None
    return question_context(record.context).user_tools


def user_tools_html(record: HumanRequestRecord) -> str:
    """The person's tools beside ``record``'s question as HTML ("" when it offers none)."""
    tools = user_tools_of(record)
    if tools is None:
        return ""
    ident = html.escape(record.id, quote=True)
    parts = [
        f'<div id="phone" data-request="{ident}" data-calls-left="{tools.calls_left}">',
        '<p id="phone-title"><b>Your own tools</b>: press one to use it. Its result shows'
        " here and in the line at the top; what you typed stays in the box.</p>",
    ]
    if tools.results:
        parts.append('<ol id="phone-results">')
        for made in tools.results:
            given = json.dumps(made.arguments, ensure_ascii=False) if made.arguments else ""
            said = html.escape(clip(given, _RESULT_SHOWN))
            mark = ' class="aah-error"' if made.error else ""
            parts.append(
                f"<li{mark}><code>{html.escape(made.tool)}({said})</code> →"
                f' <span class="aah-result">{html.escape(made.text)}</span></li>'
            )
        parts.append("</ol>")
    if tools.calls_left <= 0:
        parts.append(
            '<p id="phone-spent">No more calls in this turn: write your message to the agent.</p>'
        )
    else:
        buttons = [_button(tool) for tool in tools.tools if not tool.fields]
        forms = [_form(number, tool) for number, tool in enumerate(tools.tools) if tool.fields]
        parts.append(f'<div id="phone-buttons">{"".join(buttons)}</div>')
        parts.append(f'<div id="phone-forms">{"".join(forms)}</div>')
    if tools.unusable:
        left = "".join(f"<li>{html.escape(line)}</li>" for line in tools.unusable)
        parts.append(f'<p>Not callable here:</p><ul id="phone-unusable">{left}</ul>')
    parts.append('<p id="phone-note" role="alert" hidden></p></div>')
    return "\n".join(parts)


def _button(tool: UserTool) -> str:
    name = html.escape(tool.name, quote=True)
    about = html.escape(tool.description, quote=True)
    return (
        f'<button type="button" class="aah-phone-tool" data-phone-tool="{name}"'
        f' title="{about}">{html.escape(tool.name)}</button>'
    )


def _form(number: int, tool: UserTool) -> str:
    name = html.escape(tool.name, quote=True)
    fields = "".join(
        field_html(field, f"phone-{number}-{index}") for index, field in enumerate(tool.fields)
    )
    about = f'<p class="aah-about">{html.escape(tool.description)}</p>' if tool.description else ""
    return (
        f'<fieldset class="aah-phone-form" data-phone-form="{name}">'
        f"<legend>{html.escape(tool.name)}</legend>{about}{fields}"
        f'<button type="button" class="aah-phone-tool" data-phone-tool="{name}">'
        f"Call {html.escape(tool.name)}</button></fieldset>"
    )


def read_press(sent: str) -> Press:
    """The press the page sent (``{"request", "tool", "values", "draft"}``), within bounds.

    Raises:
        ValueError: it is not a press, or is past its bound (one line).
    """
    try:
        data: Any = parse_json(sent or "", "the call", max_chars=MAX_PRESS_CHARS)
    except OutOfBounds as exc:
        raise ValueError(f"{exc}; nothing was called") from None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("request"), str):
        raise ValueError("the page sent no call: press one of your tools again")
    return Press(data["request"], data.get("tool"), data.get("values") or {}, data.get("draft", ""))


def made_note(follow: HumanRequestRecord) -> str:
    """The status line after a call: what it gave, in one Markdown line (its text made inert)."""
    tools = user_tools_of(follow)
    if tools is None or not tools.results:
        return "Your call was made."
    made = tools.results[-1]
    verb = "was refused" if not made.made else "failed" if made.error else "gave"
    return (
        f"Your tool **{plain(made.tool)}** {verb}: “{plain(clip(made.text, _RESULT_SHOWN))}”."
        " Make another call, or write your message and send it."
    )
