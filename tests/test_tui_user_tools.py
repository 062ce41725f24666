"""The terminal app holds a τ² user's phone at the desk, driven headless by its pilot.

A τ² telecom user played by a person (``PersonTau2User`` on the store's queue, the phone's
calls recorded here instead of τ²'s environment) asks its first question. The person opens
it from the list: the phone's tools are buttons; one without arguments is called at once,
one with arguments opens its form (the network mode a choice). The next question opens with
the call's result and the words typed before the press; a form that does not fit is one
line, nothing called; the words typed then are sent as the message.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from tau2_data import domain
from textual.pilot import Pilot
from textual.widgets import Button, Input, Label, Select, Static

from aah.benchmark.tau2 import load_tau2_tasks
from aah.benchmark.tau2.messages import Tau2ToolResult
from aah.benchmark.tau2.users import PersonTau2User
from aah.runtime import QueueHuman
from aah.store.sessions import SessionStore
from aah.tools.registry.read import Registry
from aah.ui.tui.app import AahApp
from aah.ui.tui.screens import AskHumanScreen, PendingQuestionsScreen
from aah.ui.tui.user_tools_screen import UserToolFormScreen

SIZE = (110, 44)


@pytest.fixture(autouse=True)
def no_configured_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AAH_BASE_URL", "AAH_MODEL", "AAH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


async def wait_for(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        await pilot.pause(0.05)
    app = pilot.app
    raise AssertionError(
        f"the app never reached the expected state: {app.screen!r} in front, {app.focused!r} focused"
    )


def _tool_button(screen: AskHumanScreen, name: str) -> Button:
    assert screen.tools is not None
    index = next(i for i, tool in enumerate(screen.tools.tools) if tool.name == name)
    return screen.query_one(f"#phone-{index}", Button)


async def press_tool(pilot: Pilot[None], screen: AskHumanScreen, name: str) -> None:
    """Press the phone's tool ``name`` by keys: its button focused, then Enter."""
    # Once the dialog has put the cursor in its answer box (as it opens), or
    # that would take the focus back from the button and Enter would send.
    answer = screen.query_one("#ask-answer", Input)
    await wait_for(pilot, lambda: pilot.app.focused is answer)
    button = _tool_button(screen, name)
    button.focus()
    await wait_for(pilot, lambda: pilot.app.focused is button)
    await pilot.press("enter")


async def test_the_phones_tools_are_buttons_and_forms_and_the_typed_words_stay(
    shared_registry: Path,
    shared_data: Path,
    tau2_wheel: Path,
    tmp_path: Path,
    screenshots_dir: Path,
) -> None:
    db = tmp_path / "sessions.db"
    telecom = domain("telecom", tau2_wheel)
    made: list[tuple[str, dict[str, Any]]] = []
    said: list[str] = []
    store = SessionStore(db)
    session = store.open_session("τ²", setting="tau2")
    store.set_status(session.id, "waiting")
    person = PersonTau2User(
        QueueHuman(store, poll_seconds=0.05), telecom, load_tau2_tasks(telecom)[0]
    )
    person.bind_session(session.id)

    async def run(name: str, arguments: Mapping[str, Any]) -> Tau2ToolResult:
        made.append((name, dict(arguments)))
        return Tau2ToolResult(f"u{len(made)}", f"[bold]{name}[/] done {len(made)}")

    async def turn() -> None:
        said.append(await person.respond(1, "Please turn your mobile data on.", run))

    user = threading.Thread(target=lambda: asyncio.run(turn()))
    user.start()
    registry = Registry(shared_registry)
    app = AahApp(registry, db, data=shared_data, annotator="tess")
    try:
        while not store.humans.pending_human_requests():
            time.sleep(0.02)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("p")
            await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
            first = app.screen
            assert isinstance(first, AskHumanScreen)
            await pilot.press(*"My data is off")
            # A tool without arguments: its button calls it; the typed words go with it.
            await press_tool(pilot, first, "toggle_data")
            await wait_for(
                pilot, lambda: app.screen is not first and isinstance(app.screen, AskHumanScreen)
            )
            second = app.screen
            assert isinstance(second, AskHumanScreen)
            results = str(second.query_one("#phone-results", Static).render())
            assert "toggle_data() → [bold]toggle_data[/] done 1" in results  # text, not markup
            assert second.query_one("#ask-answer", Input).value == "My data is off"
            # A tool with arguments opens its form; one that does not fit is one line.
            app.save_screenshot("tui-user-tools.svg", str(screenshots_dir))
            await press_tool(pilot, second, "set_network_mode_preference")
            await wait_for(pilot, lambda: isinstance(app.screen, UserToolFormScreen))
            form = app.screen
            await pilot.press("ctrl+s")
            problem = form.query_one("#phone-form-problem", Label)
            await wait_for(pilot, lambda: "Mode is required" in str(problem.render()))
            assert made == [("toggle_data", {})] and app.screen is form
            form.query_one("#phone-field-0", Select).value = "4g_only"
            await pilot.press("ctrl+s")
            await wait_for(
                pilot, lambda: isinstance(app.screen, AskHumanScreen) and app.screen is not second
            )
            third = app.screen
            assert isinstance(third, AskHumanScreen)
            answer = third.query_one("#ask-answer", Input)
            assert answer.value == "My data is off"
            answer.focus()
            await pilot.press(*", now it works.", "enter")
            await wait_for(pilot, lambda: bool(said))
    finally:
        user.join(timeout=30)
        registry.close()
        store.close()
    assert made == [("toggle_data", {}), ("set_network_mode_preference", {"mode": "4g_only"})]
    assert said == ["My data is off, now it works."]
