"""The approval dialog's typed decision, and respond by keys in a real terminal (tmux, 80x24).

``s`` opens the box for the result the agent reads instead of the call's;
an empty result is refused in the dialog (which stays open, the box with
it), and the typed result is stored as a ``respond`` decision, alone. The
dialog returns a :class:`~aah.desk.Decision` signed by the annotator.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from terminal_app import TMUX, TerminalApp
from textual.widgets import Input

from aah.desk import Decision
from aah.store import SessionStore
from aah.tools.registry.read import Registry
from aah.ui.tui.app import AahApp
from aah.ui.tui.approval_screen import ApproveCallScreen

RESULT = "Booked room 12, ref 4471"


def queued_approval(db: Path) -> tuple[str, str]:
    """A waiting session whose POST call waits for approval; the session's and request's ids."""
    with SessionStore(db) as store:
        session = store.open_session("Book two rooms", task_id="t1", setting="perfect")
        store.set_status(session.id, "waiting")
        rooms = {"name": "rooms", "type": "integer", "required": True, "location": "body"}
        call = {"tool": "hotel__book", "method": "POST", "arguments": {"rooms": 2},
                "parameters": [rooms], "rule": "method POST"}  # fmt: skip
        request = store.humans.create_human_request(
            session.id, "Approve this call?", {"query": "Book", "approval": call}, kind="approval"
        )
    return session.id, request.id


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_respond_by_keys_stores_the_typed_result_and_refuses_an_empty_one(
    shared_registry: Path, shared_data: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    session_id, request_id = queued_approval(db)
    env = {
        "AAH_REGISTRY": str(shared_registry),
        "AAH_DB": str(db),
        "AAH_BASE_URL": "",
        "AAH_MODEL": "",
    }

    def status() -> str:
        with SessionStore(db) as store:
            record = store.humans.get_human_request(request_id)
        assert record is not None
        return record.status

    with TerminalApp(tmp_path, env, f"--data {shared_data}", name="aah-respond") as term:
        term.wait_until(lambda text: "q Quit" in text)
        term.tmux("send-keys", "p")
        term.wait_until(lambda text: "Approve this call?" in text)
        term.tmux("send-keys", "Enter")
        shown = term.wait_until(lambda text: "POST hotel__book" in text and "s respond" in text)
        # Each key once its effect shows, as a person types: not faster than the screen.
        term.tmux("send-keys", "s")
        term.wait_until(lambda text: "The result the agent reads" in text)
        term.tmux("send-keys", "Enter")  # empty: refused, the dialog and its box stay
        shown = term.wait_until(lambda text: "Type the result the agent reads" in text)
        assert "POST hotel__book" in shown and status() == "pending"
        term.tmux("send-keys", "-l", RESULT)
        term.wait_until(lambda text: RESULT in text)
        term.tmux("send-keys", "Enter")
        deadline = time.monotonic() + 30
        while status() == "pending" and time.monotonic() < deadline:
            time.sleep(0.1)
        with SessionStore(db) as store:
            record = store.humans.get_human_request(request_id)
            session = store.get_session(session_id)
        assert record is not None and session is not None
        assert (record.decision, record.answer) == ("respond", RESULT)
        assert (record.edited_arguments, record.reason) == (None, "")
        assert record.context["approval"]["arguments"] == {"rooms": 2}


async def test_the_dialog_returns_a_typed_decision_signed_by_the_annotator(
    shared_registry: Path, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AAH_BASE_URL", "AAH_MODEL", "AAH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "s.db"
    _, request_id = queued_approval(db)
    with SessionStore(db) as store:
        record = store.humans.get_human_request(request_id)
    assert record is not None
    registry = Registry(shared_registry)
    app = AahApp(registry, tmp_path / "other.db", data=shared_data, annotator="tess")
    returned: list[Decision | None] = []
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            dialog = ApproveCallScreen(record, decided_by="tess")
            app.push_screen(dialog, callback=returned.append)
            await pilot.pause()
            # Why it waits, in the web page's words (rule_words), not "needs approval: method POST".
            asked = str(dialog.query_one("#ask-question").render())
            assert "the approval policy holds calls made with POST" in asked
            assert "needs approval" not in asked
            await pilot.press("e")
            dialog.query_one("#ask-answer", Input).value = '{"rooms": 3}'
            await pilot.press("enter")
            deadline = time.monotonic() + 30
            while not returned and time.monotonic() < deadline:
                await pilot.pause(0.05)
    finally:
        registry.close()
    [decision] = returned
    assert isinstance(decision, Decision)
    assert (decision.decision, decision.arguments, decision.decided_by) == (
        "edit",
        {"rooms": 3},
        "tess",
    )
    assert decision.reason == "" and decision.response == "" and decision.seconds > 0
