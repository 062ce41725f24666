"""Model text in a report is cut by lines, characters and words, and shown inert.

The corpus holds every kind of text a model, a server or a tool can return
that would take over a report: a degenerate reply of a thousand lines, line
breaks of every spelling, words of thousands of characters, terminal escape
sequences, control, zero-width and bidirectional characters. Each is put in a
failed session's final answer (and query, and error message) and the report
is rendered in every format that quotes it: terminal text, Markdown, HTML and
JSON (CSV holds per-cell figures only, no model text).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from aah.cli.report import _print_whole
from aah.events import ErrorEvent, FinalAnswerEvent
from aah.report import (
    build_report,
    render_csv,
    render_html,
    render_json,
    render_markdown,
    rich_tables,
)
from aah.scoring.quoting import QUOTE_LINES, WORD_CHARS, plain_text, quote
from aah.store.sessions import SessionStore

# Characters no quoted text may carry into a report: escapes, controls, separators a
# table reads as line breaks, invisible and bidirectional characters.
FORBIDDEN = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b\u200e\u200f\u2028\u2029"
    r"\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
ANSWER = "answer-start"

CORPUS: dict[str, str] = {
    "degenerate I-newline x1024": "I\n" * 1024,
    "CR-only lines": "\r".join(f"line {n}" for n in range(400)),
    "CRLF lines": "\r\n".join(f"line {n}" for n in range(400)),
    "U+2028 line separators": "\u2028".join(f"line {n}" for n in range(400)),
    "U+2029 paragraph separators": "\u2029".join(f"para {n}" for n in range(400)),
    "vertical tab, form feed, NEL": "\x0b".join("a\x0cb\x85c" for _ in range(300)),
    "only newlines": "ok" + "\n" * 5000 + "end",
    "blank lines between words": "\n\n\n \n".join(["w"] * 600),
    "one 10,000-character word": "x" * 10_000,
    "long words in a line": " ".join(["y" * 500] * 20),
    "ANSI colours and screen clear": "\x1b[31mred\x1b[0m \x1b[2J\x1b[H cleared " * 50,
    "OSC hyperlink and title": "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07"
    "\x1b]0;owned\x07 text",
    "8-bit CSI and C1 controls": "\x9b31mred\x9b0m \x85\x90x\x9c",
    "NUL, BEL, backspace": "pa\x00ss\x07wo\x08rd " * 100,
    "zero-width characters": "pass\u200bword\ufeff \u2060hid\u00adden " * 80,
    "RTL override": "invoice\u202egnp.exe \u2066isolate\u2069 \u200fmark " * 40,
    "tabs and a newline flood": "\t\tcol\n" * 2000,
}
CLEAN = {"short answer": "Canberra.", "two lines": "First line.\nSecond line."}


@pytest.mark.parametrize("text", list(CORPUS.values()), ids=list(CORPUS))
def test_quote_keeps_few_lines_short_words_and_nothing_hostile(text: str) -> None:
    quoted = quote(text, 300)
    assert len(quoted.split("\n")) <= QUOTE_LINES
    assert not FORBIDDEN.search(quoted)
    assert "\x1b" not in quoted and "\r" not in quoted and "\t" not in quoted
    # A word is cut to WORD_CHARS at most, its marker aside.
    assert all(len(word) <= WORD_CHARS for word in re.sub(r"…\[[^\]]*\]", " ", quoted).split())
    assert len(quoted) <= 300 + len("…[+99999 lines, +99999 chars]")


@pytest.mark.parametrize("text", list(CLEAN.values()), ids=list(CLEAN))
def test_plain_text_is_left_as_it_is(text: str) -> None:
    assert quote(text, 300) == text


def test_what_was_cut_is_said() -> None:
    assert quote("I\n" * 1024, 300) == "I\nI\nI…[+1021 lines]"
    assert quote("x" * 100, 300) == "x" * 40 + "…[+60 chars]"
    assert quote("abc\u202edef", 300) == "abc<U+202E>def"
    assert plain_text("\x1b[1mbold\x1b[0m\r\nnext") == "bold\nnext"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "q.db") as opened:
        yield opened


def failed_session(store: SessionStore, text: str) -> None:
    """A session graded fail whose answer is ``text``, and one that ended in ``text``."""
    store.create_run("r", {"model": "m"})
    session = store.open_session(f"{ANSWER} {text}", run="r", task_id="t1", setting="perfect")
    store.append_event(FinalAnswerEvent(session_id=session.id, text=f"{ANSWER} {text}"))
    store.finish_session(session.id, "finished", f"{ANSWER} {text}")
    store.add_grade(session.id, "grader", "v1", ["fail"], "fail")
    broken = store.open_session("q", run="r", task_id="t2", setting="perfect")
    store.append_event(ErrorEvent(session_id=broken.id, message=text, where="agent"))
    store.finish_session(broken.id, "error", None)


def terminal(report: object) -> str:
    sink = io.StringIO()
    console = Console(file=sink, width=120, color_system=None)
    for item in rich_tables(report, 120):  # type: ignore[arg-type]
        _print_whole(item, console)
    return sink.getvalue()


def example_section(text: str) -> list[str]:
    """The terminal lines of the examples table."""
    start = text.index("Sessions that did not pass")
    end = text.index("Graded fail or ended in error", start)
    return text[start:end].splitlines()


@pytest.mark.parametrize("text", list(CORPUS.values()), ids=list(CORPUS))
def test_every_format_quotes_model_text_short_and_inert(store: SessionStore, text: str) -> None:
    failed_session(store, text)
    report = build_report(store)
    shown = terminal(report)
    # Per part of the table, two rows of at most QUOTE_LINES lines each (wrapped at most
    # once more in a narrow column), not a line per line of the text.
    section = example_section(shown)
    parts = sum(1 for line in section if line.startswith("┏"))
    body = sum(1 for line in section if line.startswith("│"))
    assert body <= parts * 2 * 2 * QUOTE_LINES, body
    outputs = {
        "text": shown,
        "md": render_markdown(report),
        "html": render_html(report),
        "json": json.dumps(json.loads(render_json(report))["examples"], ensure_ascii=False),
        "csv": render_csv(report),
    }
    for name, output in outputs.items():
        # The page's own newlines aside, nothing hostile gets through.
        assert not FORBIDDEN.search(output.replace("\r\n", "\n")), name
    data = json.loads(render_json(report))
    answers = [example["final_answer"] for example in data["examples"]]
    assert all(len(answer.split("\n")) <= QUOTE_LINES for answer in answers)
    notes = [note for note in data["notes"] if "ended in error" in note]
    assert notes and all("\n" not in note for note in notes)
