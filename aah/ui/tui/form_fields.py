"""A form's fields in the terminal app: one widget a field, a label, and what was given.

Shared by the dialogs that show a form built from a schema: an MCP server's
question (``elicitation_screen``) and a tool of the person's own
(``user_tools_screen``). Every text from a schema is shown as text, never
read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Select, SelectionList

from aah.desk import ElicitationField


def form_values(screen: Widget, fields: Sequence[ElicitationField], prefix: str) -> dict[str, Any]:
    """What the person gave in ``screen``'s form, field by field (an empty box is left out).

    Field ``i``'s widget is ``#{prefix}-{i}`` (made by :func:`field_widget`).
    """
    given: dict[str, Any] = {}
    for index, field in enumerate(fields):
        widget = screen.query_one(f"#{prefix}-{index}")
        if isinstance(widget, Input) and widget.value.strip():
            given[field.name] = widget.value
        elif isinstance(widget, Checkbox):
            given[field.name] = widget.value
        elif isinstance(widget, Select) and isinstance(widget.value, str):
            given[field.name] = widget.value
        elif isinstance(widget, SelectionList) and widget.selected:
            given[field.name] = [str(v) for v in widget.selected]
    return given


def field_label(field: ElicitationField) -> str:
    """A field's label: its title, required mark, bounds or format, and what it is for."""
    hint = ""
    if field.format is not None:
        hint = f" ({field.format})"
    elif field.minimum is not None or field.maximum is not None:
        low = "" if field.minimum is None else f"{field.minimum:g}"
        high = "" if field.maximum is None else f"{field.maximum:g}"
        hint = f" ({low}…{high})"
    about = f" — {field.description}" if field.description else ""
    return f"{field.label}{' *' if field.required else ''}{hint}{about}"


def field_widget(field: ElicitationField, widget_id: str) -> Widget:
    """The widget a person fills ``field`` in: a box, a checkbox, a choice or a list."""
    if field.kind == "boolean":
        return Checkbox("yes", value=field.default is True, id=widget_id)
    # Options are the server's text: shown as it is, never read as markup ("[/]" would break it).
    if field.kind == "enum" and field.multiple:
        return SelectionList[str](
            *[(Text(field.option_title(v)), v) for v in field.options], id=widget_id
        )
    if field.kind == "enum":
        options = [(Text(field.option_title(v)), v) for v in field.options]
        if isinstance(field.default, str) and field.default in field.options:
            return Select(options, value=field.default, id=widget_id)
        return Select(options, id=widget_id)
    kind = {"integer": "integer", "number": "number"}.get(field.kind, "text")
    default = "" if field.default is None else str(field.default)
    return Input(value=default, type=kind, id=widget_id)  # type: ignore[arg-type]
