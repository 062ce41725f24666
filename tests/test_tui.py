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
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Select, Switch
from typer.testing import CliRunner

from aah.benchmark.demo import demo_task
from aah.errors import AahError
from aah.events import ErrorEvent, HumanQuestionEvent
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
from aah.ui.tui.widgets import EntryView, Timeline

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

SIZE = (120, 40)
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
    assert entries[-1].tone == "final" and "Tomorrow in Lisbon" in entries[-1].body
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
        await pilot.click("#break")
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.running)
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
        request = store.get_human_request(asked[0].request_id)
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
        assert store.pending_human_requests() == []  # nobody is asked a dead question
        assert isinstance(store.events(session_id)[-1], ErrorEvent)


async def test_a_question_from_another_process_is_answered_from_the_list(app: AahApp) -> None:
    with SessionStore(app.db) as runner_store:  # what a batch run elsewhere writes
        session = runner_store.open_session("Convert 20 EUR to USD", run=None, task_id="t1")
        asked = runner_store.create_human_request(session.id, "Which date's rate?", {"query": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.stats.waiting_elsewhere == 1, seconds=3)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        await pilot.press("enter")
        await answer_question(pilot, "today")
        await wait_for(pilot, lambda: app.stats.waiting_elsewhere == 0, seconds=3)
    with SessionStore(app.db) as store:
        request = store.get_human_request(asked.id)
        assert request is not None
        assert request.status == "answered" and request.answer == "today"
        assert request.answered_by == "tui"


def queue_holders(db: Path) -> dict[str, tuple[str, ...]]:
    with SessionStore(db) as store:
        return {e.question: e.claimed_by for e in store.queue_listing().entries}


async def test_an_open_question_is_claimed_and_let_go_when_put_aside(
    registry: Registry, shared_data: Path, tmp_path: Path
) -> None:
    app = AahApp(registry, tmp_path / "sessions.db", data=shared_data, annotator="tess")
    with SessionStore(app.db) as runner_store:
        session = runner_store.open_session("Convert 20 EUR to USD", task_id="t1")
        runner_store.create_human_request(session.id, "Which date's rate?", {"query": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        assert queue_holders(app.db) == {"Which date's rate?": ("tess",)}
        with SessionStore(app.db) as web:  # a web annotator meanwhile
            assert web.claim_next("wendy") is None
        await pilot.press("escape")  # later
        await wait_for(pilot, lambda: queue_holders(app.db) == {"Which date's rate?": ()})
        with SessionStore(app.db) as web:
            taken = web.claim_next("wendy")
            assert taken is not None and taken.question == "Which date's rate?"


async def test_an_open_questions_claim_is_renewed_while_it_stays_open(
    registry: Registry, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tui_app, "CLAIM_RENEW_SECONDS", 0.2)
    app = AahApp(registry, tmp_path / "sessions.db", data=shared_data, annotator="tess")
    with SessionStore(app.db) as runner_store:
        session = runner_store.open_session("Convert 20 EUR to USD", task_id="t1")
        runner_store.create_human_request(session.id, "Which date's rate?", {"query": "x"})

    def lease_end() -> str:
        with sqlite3.connect(app.db) as conn:
            rows = conn.execute("SELECT until FROM claims WHERE annotator = 'tess'").fetchall()
        return str(rows[0][0]) if rows else ""

    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        await wait_for(pilot, lambda: lease_end() != "")
        first = lease_end()
        await wait_for(pilot, lambda: lease_end() > first, seconds=5)


async def test_a_question_another_annotator_holds_is_marked_taken_and_not_opened(
    registry: Registry, shared_data: Path, tmp_path: Path
) -> None:
    app = AahApp(registry, tmp_path / "sessions.db", data=shared_data, annotator="tess")
    with SessionStore(app.db) as runner_store:
        session = runner_store.open_session("Convert 20 EUR to USD", task_id="t1")
        held = runner_store.create_human_request(session.id, "Which date's rate?", {"query": "x"})
        other = runner_store.create_human_request(session.id, "Which bank?", {"query": "x"})
        assert runner_store.claim_request(held.id, "wendy")
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
        answered = store.get_human_request(other.id)
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
        assert note.startswith("tools: ") and "forecast" in note
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.running)
        entries = timeline(app)
    assert not any(e.tone == "ask" for e in entries)
    assert any(e.tone == "ok" for e in entries) and entries[-1].tone == "final"


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
