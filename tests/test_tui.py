"""The terminal app, driven headless with Pilot against the scripted model server.

Every session runs for real: the app starts its own FakeLLMServer (no model is
configured), tools answer in mock mode, questions go through the store.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer
from http_server import LocalServer, make_spec
from terminal_app import TMUX, TerminalApp
from textual import notifications
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, OptionList, Select, Switch
from textual.widgets._toast import Toast
from typer.testing import CliRunner

from aah.benchmark.demo import demo_task
from aah.desk import FakeClock
from aah.errors import AahError
from aah.events import ErrorEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.http.live_faults import LiveFaultExecutor
from aah.tools.http.modes import make_executor
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry
from aah.ui.tui import app as tui_app
from aah.ui.tui.app import AahApp
from aah.ui.tui.screens import AskHumanScreen, PendingQuestionsScreen
from aah.ui.tui.tasks import generic_script, placeholder_arguments
from aah.ui.tui.widgets import EntryView, SessionStats, Timeline

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

ROOT = Path(__file__).resolve().parents[1]
SIZE = (120, 40)
# A presenter's large font leaves 80x24 or less; the app must read at each.
SIZES = [(60, 20), (80, 24), (104, 30), (120, 40)]
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    opened = Registry(path)
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def no_configured_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # The app plays the scripted demo model only when no real one is set.
    for name in ("AAH_BASE_URL", "AAH_MODEL", "AAH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def app(registry: Registry, shared_data: Path, tmp_path: Path) -> AahApp:
    return AahApp(registry, tmp_path / "sessions.db", data=shared_data)


@pytest.fixture
def tess_app(registry: Registry, shared_data: Path, tmp_path: Path) -> AahApp:
    """The app of an annotator, tess, who answers from the queue."""
    return AahApp(registry, tmp_path / "sessions.db", data=shared_data, annotator="tess")


def waiting_question(db: Path) -> str:
    """A question a runner elsewhere left waiting in ``db``; its request id."""
    with SessionStore(db) as runner_store:
        session = runner_store.open_session("Convert 20 EUR to USD", task_id="t1")
        return runner_store.humans.create_human_request(
            session.id, "Which date's rate?", {"query": "x"}
        ).id


async def open_first_queued(pilot: Pilot[None], app: AahApp) -> None:
    """Open the queue's first question, as a person does: p, then Enter."""
    await pilot.press("p")
    await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))


async def settled(pilot: Pilot[None], check: Callable[[], None], seconds: float = 30) -> None:
    """Run ``check`` (assertions) until it passes: the screen is drawn when it is drawn."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            check()
        except AssertionError:
            await pilot.pause(0.1)
        else:
            return
    check()


async def wait_for(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 60) -> None:
    # Generous: the whole suite runs on two busy cores; a met condition returns at once.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        await pilot.pause(0.05)
    app = pilot.app
    shown = [f"{e.tone}: {e.heading} {e.body[:200]}" for e in timeline(app)]  # type: ignore[arg-type]
    raise AssertionError(f"the app never reached the expected state; timeline: {shown}")


async def shown_and_ready(pilot: Pilot[None]) -> None:
    """Wait until the screen is laid out and the first task's tools are listed."""
    note = pilot.app.query_one("#task-note")
    await wait_for(pilot, lambda: str(note.render()).startswith("tools:"))
    await pilot.pause()


def timeline(app: AahApp) -> list[EntryView]:
    return app.query_one(Timeline).entries()


async def answer_question(pilot: Pilot[None], text: str) -> None:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, AskHumanScreen))
    # A person types once the cursor is in the answer box.
    await wait_for(pilot, lambda: getattr(pilot.app.focused, "id", None) == "ask-answer")
    await pilot.press(*text)
    await pilot.press("enter")


async def run_ask_task_with_a_tool_broken_while_waiting(
    pilot: Pilot[None], before_sending: Callable[[], object] | None = None
) -> None:
    """Start the 'ask' demo, put its question aside, break the tool, then answer."""
    app = pilot.app
    assert isinstance(app, AahApp)
    await pilot.press("s")
    await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
    await pilot.press("escape")  # later: the agent keeps waiting
    await wait_for(pilot, lambda: not isinstance(app.screen, AskHumanScreen))
    assert app.running and app.stats.status == "waiting"
    app.query_one("#fault-kind", Select).value = "500"
    await pilot.press("b")
    await pilot.press("p")
    await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
    await pilot.press(*"Lisbon")
    if before_sending is not None:
        before_sending()
    await pilot.press("enter")
    await wait_for(pilot, lambda: not app.running)


async def test_answering_the_agents_question_leads_to_the_final_answer(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await shown_and_ready(pilot)
        await pilot.click("#start")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        screen = app.screen
        assert isinstance(screen, AskHumanScreen)
        assert "Where do you live" in screen.request.question
        assert "What will the weather be like tomorrow" in screen.request.context["query"]
        await answer_question(pilot, "Lisbon")
        await wait_for(pilot, lambda: not app.running and app.stats.status == "finished")
        await wait_for(pilot, lambda: timeline(app)[-1].tone == "final")
        entries = timeline(app)
        assert app.stats.status == "finished" and app.stats.questions == 1
    tones = [e.tone for e in entries]
    assert "ask" in tones and "fail" not in tones
    assert any(e.heading == "↳ tui answers" and e.body == "Lisbon" for e in entries)
    assert entries[-1].tone == "final" and "in Lisbon: a high of" in entries[-1].body
    assert any(e.heading.startswith("awareness (information): IDK") for e in entries)
    with SessionStore(app.db) as store:
        (session,) = store.list_sessions()
        assert session.status == "finished" and session.task_id == "demo-ask"


async def test_a_tool_broken_mid_session_fails_and_the_agent_copes(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await run_ask_task_with_a_tool_broken_while_waiting(pilot)
        entries = timeline(app)
        assert app.stats.status == "finished" and app.stats.errors == 1
        assert "openmeteo__get_weather_forecast → 500" in str(app.query_one("#fault-list").render())
    failed = [e for e in entries if e.tone == "fail"]
    assert len(failed) == 1
    assert failed[0].heading.startswith("✗ openmeteo__get_weather_forecast → 500")
    assert "[fault]" in failed[0].heading
    assert entries[-1].tone == "final" and "server error" in entries[-1].body


async def test_a_tool_broken_before_the_start_fails_its_first_call(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#demo-task", Select).value = "success"
        await pilot.pause()
        app.query_one("#fault-kind", Select).value = "timeout"
        # Settled first: a click on a layout still being redrawn may land on a
        # Select and open it, which then takes the "s" (seen once in CI).
        await pilot.pause()
        await pilot.click("#break")
        await wait_for(pilot, lambda: any("broken (timeout)" in e.heading for e in timeline(app)))
        await pilot.press("s")
        # The run ends before its last entries are drawn: wait for the final answer too.
        await wait_for(
            pilot, lambda: not app.running and any(e.tone == "final" for e in timeline(app))
        )
        entries = timeline(app)
    (failed,) = [e for e in entries if e.tone == "fail"]
    assert "no response" in failed.heading and "timeout" in failed.body
    assert "did not answer" in entries[-1].body


async def test_declining_a_question_tells_the_agent_and_the_session_ends(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: not app.running)
        entries = timeline(app)
        session_id = app.session_id
    assert any(e.heading == "↳ tui declined to answer" for e in entries)
    assert entries[-1].tone == "final"
    assert session_id is not None
    with SessionStore(app.db) as store:
        asked = [e for e in store.events(session_id) if isinstance(e, HumanQuestionEvent)]
        request = store.humans.get_human_request(asked[0].request_id)
        assert request is not None and request.status == "declined"


async def test_closing_the_app_mid_question_closes_the_session(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        session_id = app.session_id
    assert session_id is not None
    with SessionStore(app.db) as store:
        session = store.get_session(session_id)
        assert session is not None and session.status == "error"
        assert store.humans.pending_human_requests() == []  # nobody is asked a dead question
        assert isinstance(store.events(session_id)[-1], ErrorEvent)


async def test_quitting_mid_session_asks_for_a_second_q_first(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        await pilot.press("escape")  # later: the session still waits
        await wait_for(pilot, lambda: not isinstance(app.screen, AskHumanScreen))
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running and app.running  # only warned: the session goes on
        assert app.session_id is not None
        with SessionStore(app.db) as store:
            assert store.get_session(app.session_id).status == "waiting"  # type: ignore[union-attr]
        await pilot.press("q")  # asked twice: it quits
        await wait_for(pilot, lambda: not app.is_running)


async def test_an_answer_typed_then_put_aside_is_there_when_the_question_reopens(
    tess_app: AahApp,
) -> None:
    app = tess_app
    asked = waiting_question(app.db)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(2):  # put aside twice: the draft survives each time
            await open_first_queued(pilot, app)
            await pilot.press(*"yest")
            await pilot.press("escape")  # a stray Esc: later
            await wait_for(pilot, lambda: not isinstance(app.screen, AskHumanScreen))
        await open_first_queued(pilot, app)
        assert app.screen.query_one("#ask-answer", Input).value == "yestyest"
        await pilot.press(*"erday", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, AskHumanScreen))
    with SessionStore(app.db) as store:
        request = store.humans.get_human_request(asked)
        assert request is not None and request.answer == "yestyesterday"


async def test_f1_shows_the_keys_and_hides_them_leaving_a_typed_answer_as_it_was(
    tess_app: AahApp,
) -> None:
    app = tess_app
    waiting_question(app.db)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")  # on the main screen: its keys, then gone again
        await wait_for(pilot, lambda: bool(app.screen.query("HelpPanel")))
        await pilot.press("f1")
        await wait_for(pilot, lambda: not app.screen.query("HelpPanel"))
        await open_first_queued(pilot, app)
        await pilot.press(*"tues")
        # A dialog hides the app's keys: it offers F1 itself.
        assert any(label.startswith("f1 Help") for label in footer_labels(app))
        await pilot.press("f1")
        await wait_for(pilot, lambda: bool(app.screen.query("HelpPanel")))
        assert "Answer later" in screen_text(app)  # the question's own keys
        answer = app.screen.query_one("#ask-answer", Input)
        assert answer.value == "tues" and answer.has_focus
        await pilot.press("f1", *"day")
        await wait_for(pilot, lambda: not app.screen.query("HelpPanel"))
        assert answer.value == "tuesday"


async def test_a_question_from_another_process_is_answered_from_the_list(app: AahApp) -> None:
    with SessionStore(app.db) as runner_store:  # what a batch run elsewhere writes
        session = runner_store.open_session("Convert 20 EUR to USD", run=None, task_id="t1")
        asked = runner_store.humans.create_human_request(
            session.id, "Which date's rate?", {"query": "x"}
        )
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.stats.waiting_elsewhere == 1, seconds=3)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        await pilot.press("enter")
        await answer_question(pilot, "today")
        await wait_for(pilot, lambda: app.stats.waiting_elsewhere == 0, seconds=3)
    with SessionStore(app.db) as store:
        request = store.humans.get_human_request(asked.id)
        assert request is not None
        assert request.status == "answered" and request.answer == "today"
        assert request.answered_by == "tui"


def queue_holders(db: Path) -> dict[str, tuple[str, ...]]:
    with SessionStore(db) as store:
        return {e.question: e.claimed_by for e in store.humans.queue_listing().entries}


async def test_an_open_question_is_claimed_and_let_go_when_put_aside(tess_app: AahApp) -> None:
    app = tess_app
    waiting_question(app.db)
    async with app.run_test(size=SIZE) as pilot:
        await open_first_queued(pilot, app)
        assert queue_holders(app.db) == {"Which date's rate?": ("tess",)}
        with SessionStore(app.db) as web:  # a web annotator meanwhile
            assert web.humans.claim_next("wendy") is None
        await pilot.press("escape")  # later
        await wait_for(pilot, lambda: queue_holders(app.db) == {"Which date's rate?": ()})
        with SessionStore(app.db) as web:
            taken = web.humans.claim_next("wendy")
            assert taken is not None and taken.question == "Which date's rate?"


async def test_an_open_questions_claim_is_renewed_while_it_stays_open(
    registry: Registry, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tui_app, "CLAIM_RENEW_SECONDS", 0.2)  # the app's timer, not a lease
    clock = FakeClock()
    db = tmp_path / "sessions.db"
    app = AahApp(registry, db, data=shared_data, annotator="tess", clock=clock)
    waiting_question(app.db)

    def lease_end() -> str:
        with sqlite3.connect(app.db) as conn:
            rows = conn.execute("SELECT until FROM claims WHERE annotator = 'tess'").fetchall()
        return str(rows[0][0]) if rows else ""

    async with app.run_test(size=SIZE) as pilot:
        await open_first_queued(pilot, app)
        await wait_for(pilot, lambda: lease_end() != "")
        first = lease_end()
        await pilot.pause(0.5)  # several ticks of the app's timer: no renewal is due yet
        assert lease_end() == first
        # Renewed within a third of the lease (the desk's workflow, as on the web page).
        clock.advance(app.workflow.renew_every + 1)
        await wait_for(pilot, lambda: lease_end() > first, seconds=5)


async def test_a_question_another_annotator_holds_is_marked_taken_and_not_opened(
    tess_app: AahApp,
) -> None:
    app = tess_app
    with SessionStore(app.db) as runner_store:
        session = runner_store.open_session("Convert 20 EUR to USD", task_id="t1")
        held = runner_store.humans.create_human_request(
            session.id, "Which date's rate?", {"query": "x"}
        )
        other = runner_store.humans.create_human_request(session.id, "Which bank?", {"query": "x"})
        assert runner_store.humans.claim_request(held.id, "wendy")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        options = app.screen.query_one("#pending-list", OptionList)
        labels = [str(options.get_option_at_index(n).prompt) for n in range(2)]
        assert "[taken by wendy]" in labels[0] and "taken" not in labels[1]
        await pilot.press("enter")  # the taken one
        await wait_for(pilot, lambda: not isinstance(app.screen, PendingQuestionsScreen))
        await pilot.pause(0.5)
        assert not isinstance(app.screen, AskHumanScreen)
        shown = [str(n.message) for n in app._notifications]
        assert any(m.startswith("Taken by wendy") for m in shown), shown
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        await pilot.press("down", "enter")
        await answer_question(pilot, "the central bank")
        await wait_for(pilot, lambda: not isinstance(app.screen, AskHumanScreen))
    with SessionStore(app.db) as store:
        answered = store.humans.get_human_request(other.id)
        assert answered is not None and answered.answered_by == "tess"
        assert queue_holders(app.db) == {"Which date's rate?": ("wendy",)}


async def test_a_benchmark_task_runs_with_the_generic_script(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#source", Select).value = "benchmark"
        await wait_for(pilot, lambda: app.query_one("#bench-task", Select).value != Select.NULL)
        app.query_one("#bench-setting", Select).value = "underspecified"
        await pilot.pause()
        await pilot.press("s")
        await answer_question(pilot, "Ethereum")
        await wait_for(pilot, lambda: not app.running)
        entries = timeline(app)
    assert entries[-1].tone == "final"
    assert any(e.tone == "ok" and e.heading.startswith("✓ coinlore__") for e in entries)
    with SessionStore(app.db) as store:
        (session,) = store.list_sessions()
        assert session.setting == "underspecified" and session.status == "finished"


async def test_free_text_finds_tools_and_runs_without_aah(app: AahApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#source", Select).value = "free"
        await pilot.pause()
        app.query_one("#aah", Switch).value = False
        app.query_one("#free-query", Input).focus()
        await pilot.press(*"forecast")
        note = str(app.query_one("#task-note").render())
        assert note.startswith("tools: found as it goes (find_tools), likely ")
        assert "forecast" in note
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.running)
        entries = timeline(app)
    assert not any(e.tone == "ask" for e in entries)
    assert any(e.tone == "ok" for e in entries) and entries[-1].tone == "final"
    # No endpoint was handed over: the agent searched, then called what it found.
    with SessionStore(app.db) as store:
        (session,) = store.list_sessions()
        events = store.events(session.id)
    (found,) = [e for e in events if e.kind == "discovery"]
    assert found.need == "forecast" and found.hits
    calls = [e for e in events if e.kind == "tool_call"]
    assert [c.tool for c in calls] == [found.hits[0]] and calls[0].check == "ok"


async def test_main_screen_snapshot_for_the_readme(
    registry: Registry, tmp_path: Path, screenshots_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the header shows the default, relative database path
    app = AahApp(registry, Path("sessions/aah.db"))

    def snapshot(name: str) -> Path:
        return Path(app.save_screenshot(filename=name, path=str(screenshots_dir)))

    shots: list[Path] = []
    async with app.run_test(size=SIZE) as pilot:
        await run_ask_task_with_a_tool_broken_while_waiting(
            pilot, before_sending=lambda: shots.append(snapshot("tui-ask.svg"))
        )
        await pilot.pause()
        shots.append(snapshot("tui.svg"))
    for svg in shots:
        assert svg.read_text(encoding="utf-8").startswith("<svg")
    if CHROMIUM.exists():  # the README shows PNGs; a browser renders the SVGs
        svgs_to_pngs(shots)


async def test_presenter_size_snapshot_for_the_readme(
    registry: Registry, tmp_path: Path, screenshots_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = AahApp(registry, Path("sessions/aah.db"))

    def snapshot(name: str) -> Path:
        return Path(app.save_screenshot(filename=name, path=str(screenshots_dir)))

    async with app.run_test(size=(80, 24)) as pilot:
        await shown_and_ready(pilot)
        await pilot.press("1", "s")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        await pilot.press(*"Lisbon")
        await pilot.pause(0.2)
        shots = [snapshot("tui-80x24-ask.svg")]
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.running)
        await pilot.pause(0.3)
        shots.append(snapshot("tui-80x24.svg"))
    for svg in shots:
        assert svg.read_text(encoding="utf-8").startswith("<svg")
    if CHROMIUM.exists():
        svgs_to_pngs(shots)


def svgs_to_pngs(svgs: list[Path]) -> None:
    """Render each SVG with headless chromium at its own size, all at once."""
    runs = []
    for svg in svgs:
        match = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text(encoding="utf-8"))
        assert match is not None
        width, height = (round(float(v)) for v in match.groups())
        command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu"]
        command += ["--hide-scrollbars", f"--window-size={width},{height}"]
        command += [f"--screenshot={svg.with_suffix('.png')}", svg.as_uri()]
        runs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    assert all(run.wait(timeout=60) == 0 for run in runs)
    assert all(svg.with_suffix(".png").stat().st_size > 10_000 for svg in svgs)


async def test_without_benchmark_data_that_source_says_how_to_get_it(
    registry: Registry, tmp_path: Path
) -> None:
    app = AahApp(registry, tmp_path / "s.db", data=tmp_path / "no-data")
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#source", Select).value = "benchmark"
        note = app.query_one("#task-note")
        await wait_for(pilot, lambda: "not a data directory" in str(note.render()))
        await pilot.press("s")
        await pilot.pause()
        assert not app.running


async def test_a_configured_model_is_used_instead_of_the_scripted_one(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer(demo_task("success").script) as llm:
        monkeypatch.setenv("AAH_BASE_URL", llm.base_url)
        monkeypatch.setenv("AAH_MODEL", "fake-model")
        monkeypatch.setenv("AAH_LLM_RETRIES", "0")
        app = AahApp(registry, tmp_path / "s.db")
        async with app.run_test(size=SIZE) as pilot:
            app.query_one("#demo-task", Select).value = "success"
            assert "a real model" in str(app.query_one("#model-note").render())
            app.query_one("#start").focus()
            await pilot.press("a")  # Ask-and-Help off for this session
            assert app.query_one("#aah", Switch).value is False
            await pilot.press("s")
            await wait_for(pilot, lambda: not app.running)
            entries = timeline(app)
            assert app.stats.model == "fake-model"
        assert llm.requests and all(
            "ask_human" not in str(r.get("tools", "")) for r in llm.requests
        )
    assert entries[-1].tone == "final" and "Berlin" in entries[-1].body


def test_live_faults_change_between_two_calls_of_one_executor() -> None:
    with LocalServer() as api:
        spec = make_spec(api.url("/json"), name="forecast")
        executor = LiveFaultExecutor(make_executor("live", retries=0), timeout=1.0)
        try:
            assert executor.call(spec, {}).status == 200
            executor.break_tool("local__forecast", "500")
            broken = executor.call(spec, {})
            executor.fix_tool("local__forecast")
            fixed = executor.call(spec, {})
        finally:
            executor.close()
        assert api.count("/json") == 2  # the broken call never reached the server
    assert broken.status == 500 and not broken.ok and broken.mode == "fault"
    assert fixed.status == 200 and fixed.ok


def test_generic_script_calls_the_first_tool_with_typed_placeholders(registry: Registry) -> None:
    spec = registry.get("openmeteo__get_weather_forecast")
    arguments = placeholder_arguments(spec)
    required = {p.name: p.type for p in spec.parameters if p.required}
    assert set(arguments) == set(required)
    assert all(isinstance(v, float) for k, v in arguments.items() if required[k] == "number")
    rules = generic_script([spec])["rules"]
    assert rules[0]["when"]["has_tools"] is False
    assert generic_script([])["rules"][-1]["reply"].startswith("I cannot do this")


def test_the_command_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from aah.cli.tui import tui

    cli = typer.Typer()
    cli.command()(tui)
    monkeypatch.setitem(sys.modules, "textual", None)  # as if the ui extra were missing
    result = CliRunner().invoke(cli, [])
    assert isinstance(result.exception, AahError)
    assert str(result.exception) == "the terminal app needs the ui extra: pip install 'aah[ui]'"


def test_an_unknown_demo_task_is_one_line(tmp_path: Path) -> None:
    from aah.cli.tui import build_app

    with pytest.raises(AahError, match="no demo task 'nope': choose one of ask"):
        build_app(tmp_path / "s.db", None, task_id="nope")


# --- at a presenter's sizes ---------------------------------------------------


def screen_text(app: AahApp) -> str:
    """What the terminal shows now, as text (the top screen over those below it)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def split_words(shown: str, text: str) -> list[str]:
    """The words of ``text`` not shown whole (cut mid-word, folded, or missing)."""
    return [
        word for word in text.split() if not re.search(rf"(?<!\S){re.escape(word)}(?!\S)", shown)
    ]


def footer_labels(app: AahApp) -> list[str]:
    """The "key label" pairs the footer offers now."""
    shown = []
    for _, binding, enabled, _ in app.screen.active_bindings.values():
        if binding.show and enabled:
            shown.append(f"{app.get_key_display(binding)} {binding.description}")
    return list(dict.fromkeys(shown))


async def test_the_timers_that_tick_while_the_app_closes_find_no_screen_and_do_nothing(
    app: AahApp,
) -> None:
    """Textual's timers may tick once more after the last screen is popped (seen in CI)."""
    async with app.run_test(size=(80, 24)):
        pass
    assert app.screen_stack == []
    app.set_reactive(AahApp.running, True)
    app.set_reactive(AahApp.stats, SessionStats(status="waiting"))
    app._own_questions.append("a-request")
    app._check_questions()  # raised ScreenStackError before
    app._renew_claim()
    assert "a-request" not in app._opened


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_each_size_reads_whole_words_and_the_timeline_has_room(
    app: AahApp, size: tuple[int, int]
) -> None:
    width, _ = size
    async with app.run_test(size=size) as pilot:

        def main_screen_reads_whole() -> None:
            timeline_width = app.query_one(Timeline).region.width
            if width < tui_app.NARROW_BELOW:
                assert timeline_width == width  # the full width when narrow
            else:
                assert timeline_width >= 40
            shown = screen_text(app)
            note = timeline(app)[0]
            assert split_words(shown, f"{note.heading} {note.body}") == []
            footer = shown.splitlines()[-1]
            assert footer_labels(app) and all(label in footer for label in footer_labels(app))

        await settled(pilot, main_screen_reads_whole)
        await pilot.press("1", "s")  # the ask task, by keys
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))

        def dialog_reads_whole() -> None:
            shown = screen_text(app)
            question = app.screen.request.question  # type: ignore[attr-defined]
            assert split_words(shown, question) == []
            assert split_words(shown, "Send Decline Later") == []
            assert all(label in shown.splitlines()[-1] for label in footer_labels(app))

        await settled(pilot, dialog_reads_whole)


async def test_a_narrow_screen_opens_the_setup_in_the_timelines_place(app: AahApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        assert not app.query_one("#setup").display or app.query_one("#setup").region.width == 0
        await pilot.press("t")
        await pilot.pause(0.3)
        assert app.query_one("#setup").region.width == 80
        shown = screen_text(app)
        assert split_words(shown, "Ask-and-Help (a)") == []
        assert "t Setup" in shown.splitlines()[-1]
        await pilot.press("s")  # starting shows the run
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        assert app.query_one(Timeline).region.width == 80


async def test_resizing_keeps_the_newest_entry_in_sight(app: AahApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        line = app.query_one(Timeline)
        for n in range(30):
            line.add_note(f"step {n}", "a body long enough to wrap differently at each width")
        await pilot.pause(0.3)
        assert line.scroll_y == line.max_scroll_y > 0
        for size in ((80, 24), (60, 20), (120, 40)):
            await pilot.resize_terminal(*size)
            await pilot.pause(0.3)
            assert line.scroll_y == line.max_scroll_y
            assert "step 29" in screen_text(app)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["wide", "narrow"])
async def test_every_focusable_widget_shows_its_focus(app: AahApp, size: tuple[int, int]) -> None:
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        if size[0] < tui_app.NARROW_BELOW:
            await pilot.press("t")  # the setup's controls too
            await pilot.pause(0.2)
        chain = list(app.screen.focus_chain)
        assert len(chain) >= 5
        invisible = []
        for widget in chain:
            widget.focus()  # scrolled into sight first, so both looks show it
            await pilot.pause(0.1)
            app.set_focus(None)
            await pilot.pause(0.1)
            region = widget.region
            before = [
                list(s.crop(region.x, region.right))
                for s in app.screen._compositor.render_strips()[region.y : region.bottom]
            ]
            widget.focus()
            await pilot.pause(0.1)
            after = [
                list(s.crop(region.x, region.right))
                for s in app.screen._compositor.render_strips()[region.y : region.bottom]
            ]
            if before == after:
                invisible.append(f"{type(widget).__name__}#{widget.id}")
        assert invisible == []


async def test_number_keys_choose_a_demo_task_and_s_runs_it(app: AahApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await shown_and_ready(pilot)
        await pilot.press("3", "s")  # two keystrokes: the skip task, started
        await wait_for(pilot, lambda: not app.running and app.stats.status == "skipped")
        assert app.query_one("#demo-task", Select).value == "skip"
        # The pick's "press s to start" went with the start: it covers no line of the run.
        await pilot.pause()
        assert [n.message for n in app._notifications if "Press s" in n.message] == []
        await pilot.press("9")  # there is no ninth task: said so, nothing changes
        await pilot.pause(0.2)
        assert app.query_one("#demo-task", Select).value == "skip"


async def test_a_notice_about_to_end_when_a_screen_opens_is_dropped_not_shown(
    app: AahApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Textual gives a new screen's toast a timer for what its notice has left;
    # one of almost no time never fires (the toast stays for good), and one
    # below zero freezes the app. A notice that near its end is not shown.
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await shown_and_ready(pilot)
        app.notify("About to end.", timeout=1.0)
        await wait_for(pilot, lambda: any(n.message == "About to end." for n in app._notifications))
        (notice,) = [n for n in app._notifications if n.message == "About to end."]
        # The wall clock Textual reads for notices: a fifth of a second left.
        monkeypatch.setattr(notifications, "time", lambda: notice.raised_at + 0.8)
        app.push_screen(Screen())  # in front: its toasts are built now
        await pilot.pause()
        assert list(app.screen.query(Toast)) == []
        await wait_for(pilot, lambda: not list(app._notifications), seconds=10)


async def test_the_queue_names_setting_and_task_and_opens_the_next_question(
    tess_app: AahApp,
) -> None:
    app = tess_app
    with SessionStore(app.db) as runner_store:
        first = runner_store.open_session("Convert 20 EUR", task_id="q7", setting="underspecified")
        second = runner_store.open_session("Weather", task_id="q9", setting="perfect")
        runner_store.humans.create_human_request(first.id, "Into which currency?", {"query": "x"})
        runner_store.humans.create_human_request(second.id, "Which city?", {"query": "y"})
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        options = app.screen.query_one("#pending-list", OptionList)
        labels = [str(options.get_option_at_index(n).prompt) for n in range(2)]
        assert "underspecified · q7" in labels[0] and "perfect · q9" in labels[1]
        assert not any("session" in label for label in labels)
        await pilot.press("enter")
        await answer_question(pilot, "USD")
        # The next waiting question opens by itself, named by its setting and task.
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, AskHumanScreen)
                and app.screen.request.question == "Which city?"
            ),
        )
        assert "perfect · q9" in screen_text(app)
        await pilot.press(*"Oslo", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, AskHumanScreen))
        await pilot.pause(0.3)
        assert not isinstance(app.screen, AskHumanScreen)
        assert any("No more questions" in str(n.message) for n in app._notifications)
    with SessionStore(app.db) as store:
        assert store.humans.queue_listing().total == 0


async def test_the_demo_answers_quote_the_mock_tools_values(
    app: AahApp, registry: Registry
) -> None:
    from aah.tools.http import make_executor

    task = demo_task("success")
    (call,) = [
        rule["reply"]["tool_calls"][0]
        for rule in task.script["rules"]
        if isinstance(rule["reply"], dict)
    ]
    data = make_executor("mock").call(registry.get(call["name"]), call["arguments"]).data
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "s")
        await wait_for(pilot, lambda: not app.running)
        final = timeline(app)[-1]
    assert final.tone == "final" and "shown above" not in final.body
    daily = data["daily"]
    for day in range(3):
        assert f"{daily['time'][day]}: {daily['temperature_2m_min'][day]} to" in final.body
        assert f"{daily['temperature_2m_max'][day]} °C" in final.body


def test_every_demo_tasks_quotes_resolve(registry: Registry) -> None:
    from aah.benchmark import demo_script, load_demo_tasks

    for task in load_demo_tasks():
        script = demo_script(task, [registry.get(name) for name in task.tools])
        assert "{{" not in str(script), task.id


def test_a_quote_of_a_value_the_mock_lacks_is_one_line(registry: Registry) -> None:
    from aah.benchmark import demo_script

    task = demo_task("success")
    rules = [dict(rule) for rule in task.script["rules"]]
    for rule in rules:
        if rule["when"].get("last_tool_name") and isinstance(rule["reply"], str):
            rule["reply"] = "It will be {{ daily.snowfall[0] }} cm."
    broken = task.model_copy(update={"script": {"rules": rules}})
    specs = [registry.get(name) for name in task.tools]
    with pytest.raises(AahError, match=r"the mock answer has no 'daily.snowfall\[0\]'"):
        demo_script(broken, specs)


# --- in a real terminal -------------------------------------------------------


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_the_real_app_in_an_80x24_terminal_shows_whole_words_and_keys(
    shared_registry: Path, shared_data: Path, tmp_path: Path
) -> None:
    env = {
        "AAH_REGISTRY": str(shared_registry),
        "AAH_DB": str(tmp_path / "s.db"),
        "AAH_BASE_URL": "",
        "AAH_MODEL": "",
    }
    with TerminalApp(tmp_path, env, f"--data {shared_data}") as term:
        shown = term.wait_until(lambda text: "Press 1-" in text and "q Quit" in text)
        assert term.tmux("display", "-p", "#{pane_width}x#{pane_height}").strip() == "80x24"
        lines = shown.splitlines()
        assert split_words(shown, "Press 1-4 to choose a demo task, then s to start it.") == []
        footer = next(line for line in reversed(lines) if line.strip())
        for label in ("1-4 Task", "s Start", "b Break", "p Queue", "t Setup", "q Quit"):
            assert re.search(rf"(?<!\S){re.escape(label)}(?!\S)", footer), footer
        # Bytes that are not UTF-8 (a stray 0xff, half a character) are read
        # as U+FFFD: the app goes on, where it once exited with a traceback.
        term.tmux("send-keys", "-H", "ff", "ed", "a0")
        time.sleep(0.5)
        assert "Press 1-" in term.capture() and "Traceback" not in term.capture()
        term.tmux("send-keys", "1")
        term.tmux("send-keys", "s")
        shown = term.wait_until(lambda text: "Where do you live" in text and "Decline" in text)
        question = "Where do you live? A city, or its latitude and longitude, is enough."
        assert split_words(shown, question) == []
        assert split_words(shown, "Send Decline Later") == []
        # Pasted from a coloured terminal: the escapes go, the answer stays in order.
        term.tmux("set-buffer", "Lis\x1b[31mbon\x1b[0m")
        term.tmux("paste-buffer", "-p")
        term.tmux("send-keys", "Enter")
        shown = term.wait_until(lambda text: "°C" in text)
        assert "in Lisbon: a high of" in shown.replace("\n", " ")
        # The app still answers keys after the session: the next pick says so.
        term.tmux("send-keys", "2")
        term.wait_until(lambda text: "2: A tool fails" in text)
        with SessionStore(tmp_path / "s.db") as store:
            (session,) = store.list_sessions()
            answers = [e for e in store.events(session.id) if isinstance(e, HumanAnswerEvent)]
        assert [a.answer for a in answers] == ["Lisbon"]


def _approval_request(store: SessionStore, task_id: str) -> str:
    """A waiting session whose POST call waits for approval in the queue; the request id."""
    session = store.open_session("Book two rooms", task_id=task_id, setting="perfect")
    store.set_status(session.id, "waiting")
    rooms = {"name": "rooms", "type": "integer", "required": True, "location": "body"}
    call = {"tool": "hotel__book", "method": "POST", "arguments": {"rooms": 2},
            "parameters": [rooms], "rule": "method POST"}  # fmt: skip
    request = store.humans.create_human_request(
        session.id, "Approve this call?", {"query": "Book", "approval": call}, kind="approval"
    )
    return request.id


async def test_an_approval_opens_its_dialog_and_refuses_an_invalid_edit_before_sending(
    tess_app: AahApp,
) -> None:
    from aah.ui.tui.approval_screen import ApproveCallScreen

    app = tess_app
    with SessionStore(app.db) as runner_store:
        edited = _approval_request(runner_store, "q1")
        rejected = _approval_request(runner_store, "q2")
        approved = _approval_request(runner_store, "q3")
        responded = _approval_request(runner_store, "q4")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ApproveCallScreen))
        assert "POST hotel__book" in screen_text(app)
        await pilot.press("e")
        await wait_for(pilot, lambda: getattr(app.focused, "id", None) == "ask-answer")
        app.screen.query_one("#ask-answer", Input).value = '{"rooms": "two"}'
        await pilot.press("enter")  # refused here: the wrong type never reaches the runner
        await pilot.pause(0.2)
        assert isinstance(app.screen, ApproveCallScreen)
        assert any("Refused" in str(n.message) for n in app._notifications)
        # JSON 1,000 deep (inside the caps on size): refused in one line, the dialog stays.
        deep = '{"rooms": ' + "[" * 1_000 + "]" * 1_000 + "}"
        app.screen.query_one("#ask-answer", Input).value = deep
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ApproveCallScreen)
        assert any("nests deeper than 100" in str(n.message) for n in app._notifications)
        app.screen.query_one("#ask-answer", Input).value = '{"rooms": 1}'
        await pilot.press("enter")
        # The next call in the queue opens by itself: reject it with a reason.
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, ApproveCallScreen) and app.screen.request.id == rejected,
        )
        await pilot.press("r", *"too many", "enter")
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, ApproveCallScreen) and app.screen.request.id == approved,
        )
        await pilot.press("a")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, ApproveCallScreen) and app.screen.request.id == responded
            ),
        )
        assert "s respond" in screen_text(app)
        await pilot.press("s", "enter")  # an empty result is refused: the dialog stays
        await pilot.pause(0.2)
        assert isinstance(app.screen, ApproveCallScreen) and app.screen.request.id == responded
        await pilot.press(*"Booked room 12", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ApproveCallScreen))
    with SessionStore(app.db) as store:
        ids = (edited, rejected, approved, responded)
        answers = {r: store.humans.get_human_request(r) for r in ids}
    assert {
        r: (a.decision, a.edited_arguments, a.reason, a.answer)
        for r, a in answers.items()
        if a is not None
    } == {
        edited: ("edit", {"rooms": 1}, "", ""),
        rejected: ("reject", None, "too many", ""),
        approved: ("approve", None, "", ""),
        responded: ("respond", None, "", "Booked room 12"),
    }
