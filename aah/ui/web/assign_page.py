"""The admins' box on the Review tab: offer an item, or a run's items, to named people or groups.

An item assigned to people is offered to them alone (their own group's
members too, for ``@group``); an empty list makes it everyone's again.
Items are named by their id or its first characters (the team's table
shows eight), runs by name.
"""

from __future__ import annotations

from typing import Any, Literal

import gradio as gr

from aah.errors import AahError
from aah.store import SessionStore
from aah.ui.web.auth import Annotator, page_error, require_admin
from aah.ui.web.format import plain

Target = Literal["item", "run"]


def resolve_item(store: SessionStore, given: str) -> str:
    """The id of the one item whose id is ``given`` or starts with it.

    Raises:
        AahError: none or several match (one line).
    """
    prefix = given.strip()
    if not prefix:
        raise AahError("type an item's id (its first 8 characters are enough), or a run's name")
    found = store.team.items_starting(prefix)
    if not found:
        raise AahError(f"no item's id starts with {prefix!r}: copy it from the team's table")
    if len(found) > 1:
        raise AahError(f"{len(found)} items' ids start with {prefix!r}: type more of it")
    return found[0]


def assign(store: SessionStore, target: Target, given: str, names: str) -> str:
    """Assign ``given`` (items, or a run) to ``names`` (comma-separated); the line that says so.

    Several items are separated by commas or spaces; each is checked before any is assigned.
    """
    people = [name.strip() for name in names.split(",") if name.strip()]
    stored: list[str] = []
    if target == "run":
        run = given.strip()
        if store.get_run(run) is None:
            raise AahError(f"no run {run!r} in this database: pick one the Results tab lists")
        stored = store.team.assign(people, run=run)
        what = f"run **{plain(run)}**'s items"
    else:
        items = [resolve_item(store, one) for one in given.replace(",", " ").split()]
        if not items:
            resolve_item(store, "")  # says what to type
        for item in items:
            stored = store.team.assign(people, request_id=item)
        shown = ", ".join(item[:8] for item in items)
        what = f"item{'s' if len(items) > 1 else ''} **{plain(shown)}**"
    if not stored:
        return f"{what[0].upper()}{what[1:]}: everyone's again."
    return f"{what[0].upper()}{what[1:]}: offered only to {plain(', '.join(stored))}."


def build_assign_box(store: SessionStore, user: gr.State) -> None:
    """Lay out the admins' assignment box (in the current block) and wire it."""
    with gr.Accordion("Assign items (admins)", open=False, elem_id="assign-box"):
        with gr.Row():
            target = gr.Radio(["item", "run"], value="run", label="Assign", elem_id="assign-target")
            given = gr.Textbox(
                label="Item ids (first characters; several: commas) or a run's name",
                elem_id="assign-what",
            )
            names = gr.Textbox(
                label="To (names or @groups, comma-separated; empty: everyone)",
                elem_id="assign-to",
            )
        button = gr.Button("Assign", elem_id="assign-button")
        status = gr.Markdown(elem_id="assign-status")

    def on_assign(who: Annotator | None, kind: Target, what: str, to: str) -> Any:
        require_admin(who)
        try:
            return assign(store, kind, what or "", to or "")
        except AahError as exc:
            raise page_error(str(exc)) from None

    button.click(on_assign, [user, target, given, names], [status], api_name="assign_items")
