"""Model, tool and human text reaches the terminal as text, never as control sequences.

A corpus of hostile strings goes through ``aah run``'s trace (a subprocess
against the fake model server, its raw stdout bytes checked) and through the
terminal app's timeline (Pilot), and through ``printable`` itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from aah.events import (
    AwarenessEvent,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.store.sessions import SessionStore
from aah.terminal_text import printable
from aah.testing.fake_llm import FakeLLMServer
from aah.ui.tui.widgets import Timeline

# (name, hostile string, a word of it that must stay visible)
HOSTILE: list[tuple[str, str, str]] = [
    ("clear screen", "\x1b[2J\x1b[Hcleared", "cleared"),
    ("window title BEL", "\x1b]0;owned title\x07titled", "titled"),
    ("window title ST", "\x1b]2;owned title\x1b\\titled", "titled"),
    ("hyperlink", "\x1b]8;;http://evil.example/\x1b\\clickme\x1b]8;;\x1b\\ linked", "linked"),
    ("bells", "\x07\x07\x07rung", "rung"),
    ("8-bit CSI", "\x9b2J\x9b1;1Hcsi8", "csi8"),
    ("8-bit OSC", "\x9d0;owned\x9costitle", "ostitle"),
    ("colour", "\x1b[31;1mred\x1b[0m coloured", "coloured"),
    ("device query", "\x1b[6n\x1b[c queried", "queried"),
    ("clipboard write", "\x1b]52;c;ZXZpbA==\x07clipped", "clipped"),
    ("alternate screen", "\x1b[?1049h\x1b[?25l alternated", "alternated"),
    ("full reset", "\x1bc\x1b(0 reset", "reset"),
    ("backspaces", "secret\x08\x08\x08\x08\x08\x08backed", "backed"),
    ("DCS string", "\x1bP1$r0m\x1b\\ dcs", "dcs"),
    ("APC string", "\x1b_payload\x1b\\ apc", "apc"),
    ("unterminated OSC", "opened \x1b]0;title never ends", "opened"),
    ("half CSI", "halfway \x1b[", "halfway"),
    ("bidi override", "\u202etxt.exe\u202c bidi", "bidi"),
    ("C1 controls", "\x85\x8d\x8e\x96 controlled", "controlled"),
    ("8-bit DCS", "\x90q#0;2;0;0;0\x9c sixel", "sixel"),
    ("form feed and vertical tab", "\x0c\x0b\x00\x7f fed", "fed"),
    ("rich markup", "[bold red]markup[/] [link=http://evil.example]x[/link] literal", "literal"),
]
# What an answer read from a terminal line cannot hold.
NOT_ON_ONE_LINE = ("\n", "\r", "\x0b", "\x0c", "\x85", "\x1c", "\x1d", "\x1e")
LEFT_OPEN = ("unterminated OSC", "half CSI")
MARKUP = "[bold red]markup[/] [link=http://evil.example]x[/link] literal"


def assert_no_controls(text: str, where: str) -> None:
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    bad += [c for c in text if 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069]
    assert not bad, f"{where}: {bad!r} in {text[:300]!r}"


def test_the_corpus_is_large_and_named_once() -> None:
    names = [name for name, _, _ in HOSTILE]
    assert len(names) >= 15 and len(set(names)) == len(names)


@pytest.mark.parametrize(("name", "hostile", "word"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_printable_drops_controls_and_keeps_the_words(name: str, hostile: str, word: str) -> None:
    shown = printable(hostile)
    assert_no_controls(shown, name)
    assert word in shown
    assert "owned title" not in shown and "evil.example/" not in shown


def test_a_carriage_return_cannot_hide_what_came_before() -> None:
    assert printable("rm -rf /\rls -l") == "rm -rf / ls -l"
    assert printable("one\r\ntwo\r") == "one\ntwo "
    assert printable("tab\there\nnext") == "tab\there\nnext"


def _script() -> dict[str, Any]:
    """Awareness, one question per hostile string, and a final answer quoting them all."""
    turns = [
        {
            "when": {"has_tools": True},
            "times": 1,
            "reply": {
                "text": f"{hostile} said{i}",
                "tool_calls": [{"name": "ask_human", "arguments": {"question": f"{hostile} q{i}"}}],
            },
        }
        for i, (_, hostile, _) in enumerate(HOSTILE)
    ]
    final = " | ".join(hostile for _, hostile, _ in HOSTILE) + "\rfinal overwritten"
    return {
        "rules": [
            {"when": {"has_tools": False}, "reply": "IDK: " + HOSTILE[0][1] + HOSTILE[3][1]},
            *turns,
            {"when": {"has_tools": True}, "reply": final},
        ]
    }


def test_aah_run_prints_no_control_sequence_from_model_or_person(tmp_path: Path) -> None:
    answers = [
        f"{hostile} a{i}"
        for i, (_, hostile, _) in enumerate(HOSTILE)
        if not any(c in hostile for c in NOT_ON_ONE_LINE)
    ]
    stdin = "\n".join(answers + ["fine"] * (len(HOSTILE) - len(answers))) + "\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    db = tmp_path / "s.db"
    with FakeLLMServer(_script()) as llm:
        env.update(
            {
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_API_KEY": "sk-x",
                "NO_COLOR": "1",
                "TERM": "dumb",
                "COLUMNS": "300",
                # One question per hostile text, more than the default cap.
                "AAH_MAX_QUESTIONS_PER_SESSION": "100",
            }
        )
        child = subprocess.run(
            [sys.executable, "-m", "aah", "run", "Weather?", "--human", "console"]
            + ["--step-limit", "40", "--http", "mock", "--db", str(db)],
            input=stdin.encode(),
            capture_output=True,
            env=env,
            timeout=120,
        )
    assert child.returncode == 0, child.stderr.decode()[-2000:]
    out = child.stdout.decode()
    assert_no_controls(out, "stdout")
    assert_no_controls(child.stderr.decode(), "stderr")
    assert b"\x1b" not in child.stdout + child.stderr
    for i, (name, _, word) in enumerate(HOSTILE):
        # A sequence left open swallows what follows it, as a terminal would.
        for marker in [] if name in LEFT_OPEN else [f"said{i}", f"q{i}"]:
            assert marker in out, (name, marker)
        assert word in out, name
    for i, (name, hostile, _) in enumerate(HOSTILE):
        if f"{hostile} a{i}" in answers and name not in LEFT_OPEN:
            assert f"a{i}" in out, name
    assert out.count(MARKUP) >= 3  # the said text, the question and the answer, as written
    assert "owned title" not in out and "evil.example/" not in out
    assert "overwritten" in out
    [record] = SessionStore(db).list_sessions()
    assert record.status == "finished"


def _events(session: str) -> list[Event]:
    events: list[Event] = []
    for i, (_, hostile, _) in enumerate(HOSTILE):
        events += [
            AwarenessEvent(session_id=session, question="tool", answer="idk", reason=hostile),
            ModelCallEvent(
                session_id=session, model="m", text=f"{hostile} said{i}", n_tool_calls=1
            ),
            ToolCallEvent(
                session_id=session,
                call_id=f"c{i}",
                tool="local__forecast",
                arguments={"city": hostile},
                status_code=200,
                ok=True,
                result=f"{hostile} result{i}",
            ),
            HumanQuestionEvent(session_id=session, request_id=f"r{i}", question=hostile),
            HumanAnswerEvent(
                session_id=session, request_id=f"r{i}", answer=hostile, answered_by="tui"
            ),
            ErrorEvent(session_id=session, message=hostile, where="model"),
            FinalAnswerEvent(session_id=session, text=hostile),
        ]
    return events


class TimelineApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Timeline()


async def test_the_tui_timeline_shows_hostile_text_as_text() -> None:
    app = TimelineApp()
    async with app.run_test(size=(160, 50)) as pilot:
        timeline = app.query_one(Timeline)
        for event in _events("s1"):
            timeline.add_event(event)
        await pilot.pause()
        entries = timeline.entries()
        rendered = [entry.render() for entry in app.query("TimelineEntry")]
    assert len(entries) == 7 * len(HOSTILE)
    for entry in entries:
        assert_no_controls(entry.heading + entry.body, entry.heading)
    shown = "\n".join(str(r) if not isinstance(r, Text) else r.plain for r in rendered)
    assert_no_controls(shown, "rendered timeline")
    assert shown.count(MARKUP) >= 6
    for i, (name, _, word) in enumerate(HOSTILE):
        assert word in shown and (name in LEFT_OPEN or f"result{i}" in shown), name
