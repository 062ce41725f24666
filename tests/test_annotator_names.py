"""Annotator names: look-alike spellings of one name are one annotator, or refused.

Every face that takes a name (the web sign-in, a saved sign-in, ``aah tui
--annotator``, the store itself) goes through ``aah.annotators``; these
corpora hold the spellings that used to split one person in two.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from aah.annotators import annotator_key, check_annotator_name
from aah.store import SessionStore

# Spellings a person may produce of "alice" (IME, autocorrect, paste, fonts):
# each must sign in as "alice" or be refused, never become a second annotator.
LOOKALIKES = [
    "ａｌｉｃｅ",  # fullwidth
    "ＡＬＩＣＥ",
    "𝕒lice",  # mathematical double-struck
    "𝐚𝐥𝐢𝐜𝐞",  # mathematical bold
    "ⓐlice",  # circled
    "ALICE",
    "Alice",
    "alice ",
    " alice",
    "alice\t",
    "alice\u00a0",  # no-break space
    "\u3000alice",  # ideographic space
    "ali\u200dce",  # zero-width joiner
    "ali\u200cce",  # zero-width non-joiner
    "ali\u200bce",  # zero-width space
    "\ufeffalice",  # byte-order mark
    "al\u00adice",  # soft hyphen
    "alice\u2060",  # word joiner
    "\u202ealice",  # right-to-left override
    "alice\ufe0f",  # variation selector
    "ali\u034fce",  # combining grapheme joiner
    "alice\u0336",  # combining long stroke overlay
    "a\u0335lice",  # combining short stroke overlay
    "alic\u0332e",  # combining low line
    "аlice",  # Cyrillic a
    "alicе",  # Cyrillic e
    "аӏісе",  # all Cyrillic, every letter a Latin look-alike
    "αlice",  # Greek alpha
    "ΑLICE",  # Greek capital alpha
    "alice\U000e0041",  # a tag character
    "ɑlice",  # Latin alpha (IPA), which NFKC leaves alone
    "Ɑlice",  # Latin capital alpha
    "ᴀlice",  # Latin small capital A
    "ᴀʟɪᴄᴇ",  # small capitals throughout
    "alıce",  # dotless i
    "ɑlɩce",  # Latin alpha and Latin iota
]
# Spellings of one person's name with several words or digits: each group is one key.
SAME_NAME = [
    (
        "ana maria",
        ["Ana Maria", "ana  maria", "ana\u2009maria", "ＡＮＡ　ＭＡＲＩＡ", " ana maria "],
    ),
    ("li wei 2", ["Li Wei 2", "li wei ２", "li wei ٢", "li wei ²", "li\u00a0wei 2"]),
    ("josé", ["José", "Jose\u0301", "JOSÉ", "jos\u00e9"]),
    ("strasse", ["Straße", "STRASSE", "strasse"]),
]
# Real names that must keep working, as they are stored.
ACCEPTED = [
    ("bob", "bob"),
    ("o.neil", "o.neil"),
    ("li_wei", "li_wei"),
    ("ana-maria", "ana-maria"),
    ("bob@lab", "bob@lab"),
    ("Ирина", "ирина"),
    ("Σοφία", "σοφία"),
    ("東京たろう", "東京たろう"),
    ("김민수", "김민수"),
    ("राम्या", "राम्या"),  # Devanagari vowel signs are spelling
    ("محمد", "محمد"),
    ("Zoë", "zoë"),
    ("Ɓello", "ɓello"),  # Hausa's hooked b spells, it is not a shape of b
    ("Ɛkow", "ɛkow"),  # Akan's open e
    ("Ŋozi", "ŋozi"),
    ("ɡrace", "grace"),  # script g is g
]
# Names no one may sign in with, each refused in one line.
REFUSED = [
    "",
    "   ",
    "\u200b\u200d",
    "x" * 41,
    "alice<script>",
    "alice:bob",
    "alice\U0001f600",
    "oracle",
    "ORACLE",
    "ｏｒａｃｌｅ",
    "Simulated",
    "published",
    "human:alice",
    "alice東京",
    "\ue000alice",  # private use
]


def _signs_in_as(name: str) -> str | None:
    """What the web app signs ``name`` in as; None when it refuses the name."""
    gradio = pytest.importorskip("gradio")
    from aah.ui.web.auth import WebAuth

    try:
        return WebAuth().sign_in(name, "").name
    except gradio.Error as refused:
        assert "\n" not in str(refused.message)
        return None


@pytest.mark.parametrize("name", LOOKALIKES, ids=ascii)
def test_a_lookalike_of_alice_is_alice_or_refused(name: str) -> None:
    assert _signs_in_as(name) in ("alice", None)


@pytest.mark.parametrize(("key", "spellings"), SAME_NAME, ids=[key for key, _ in SAME_NAME])
def test_spellings_of_one_name_are_one_annotator(key: str, spellings: list[str]) -> None:
    assert {_signs_in_as(name) for name in spellings} == {key}


@pytest.mark.parametrize(("name", "key"), ACCEPTED, ids=ascii)
def test_real_names_of_every_script_sign_in(name: str, key: str) -> None:
    assert _signs_in_as(name) == key
    assert check_annotator_name(key) == key  # a key is its own key


@pytest.mark.parametrize("name", REFUSED, ids=ascii)
def test_unusable_names_are_refused_in_one_line(name: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_annotator_name(name)
    assert "\n" not in str(refused.value) and str(refused.value)


def test_mixed_scripts_are_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="one script, not a mix of cyrillic, latin"):
        check_annotator_name("аlice")
    with pytest.raises(ValueError, match="looks Latin"):
        check_annotator_name("аӏісе")


def test_the_store_counts_every_spelling_under_one_annotator(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = store.open_session("Weather?", setting="underspecified")
    first = store.humans.create_human_request(session.id, "Which city?", k=2)
    second = store.humans.create_human_request(session.id, "Which day?", k=2)
    assert store.humans.claim_request(first.id, "ALICE")
    assert store.humans.answer_human_request(first.id, "ａｌｉｃｅ", "Porto")
    # The same person under another spelling: not a second answer for agreement.
    assert not store.humans.answer_human_request(first.id, "alice\u200d", "Lisbon")
    assert store.humans.answer_human_request(second.id, " Alice ", "Tuesday")
    assert [a.annotator for a in store.humans.human_answers(first.id)] == ["alice"]
    assert [entry.answer for entry in store.humans.answers_by("𝕒lice")] == ["Tuesday", "Porto"]
    assert store.humans.annotator_stats("Alice").answered_today == 2
    assert store.humans.requests_for("ALICE") == []


def test_names_stored_by_older_versions_count_as_their_key(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    session = store.open_session("Weather?", setting="underspecified")
    request = store.humans.create_human_request(session.id, "Which city?", k=3)
    store.humans.answer_human_request(request.id, "bob", "Porto")
    # Rows an older version wrote as typed; the store never rewrites them.
    with sqlite3.connect(db) as conn:
        for name, answer in [("Alice", "Lisbon"), ("alice ", "Faro")]:
            conn.execute(
                "INSERT INTO human_answers (request_id, annotator, answer, declined, created)"
                " VALUES (?, ?, ?, 0, '2024-01-01T00:00:00+00:00')",
                [request.id, name, answer],
            )
    with SessionStore(db).queries() as read:
        answers = read.annotator_answers(outside_runs=True)
    assert [(a.annotator, a.request_id) for a in answers] == [
        ("bob", request.id),
        ("alice", request.id),
    ]
    stored = [a.annotator for a in SessionStore(db).humans.human_answers(request.id)]
    assert stored == ["bob", "Alice", "alice "]


def test_annotator_key_never_fails_on_any_text() -> None:
    for raw in ["", "\x00", "\ud800", "a" * 10_000, "\u0301\u0301", "🙂"]:
        assert isinstance(annotator_key(raw), str)
    assert annotator_key("\u0301alice") == "alice"  # a mark on nothing


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("аlice", "one script"),
        ("\u200b", "--annotator is empty"),
        ("oracle", "reserved"),
        ("x" * 41, "at most 40"),
    ],
)
def test_the_terminal_app_refuses_the_names_the_web_refuses(
    tmp_path: Path, given: str, message: str
) -> None:
    pytest.importorskip("textual")
    result = subprocess.run(
        [sys.executable, "-m", "aah", "tui", "--db", str(tmp_path / "s.db"), "--annotator", given],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_terminal_app_stores_answers_under_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual")
    from aah.ui.tui.app import default_annotator

    monkeypatch.setenv("USER", "ＡＬＩＣＥ")
    assert default_annotator() == "alice"
    monkeypatch.setenv("USER", "oracle")
    assert default_annotator() == "tui"


def test_the_web_page_signs_lookalikes_in_as_one_annotator(tmp_path: Path) -> None:
    pytest.importorskip("gradio")
    from gradio_client import Client
    from web_support import seed_request, serve_app

    db = tmp_path / "s.db"
    first = seed_request(db, "Which city?", k=2)
    with serve_app(db) as url:
        api = Client(url, verbose=False)
        shown = api.predict("ＡＬＩＣＥ ", "", api_name="/sign_in")
        assert shown[0].startswith("Signed in as **alice**")
        api.predict("Porto", None, api_name="/send_answer")
        # The same person, typed another way, gets no second go at the question.
        again = Client(url, verbose=False).predict("Alice\u200d", "", api_name="/sign_in")
        assert again[0].startswith("Signed in as **alice**")
        refused = Client(url, verbose=False).predict("аlice", "", api_name="/sign_in")[0]
        assert refused.startswith("Write your name in one script") and "\n" not in refused
    store = SessionStore(db)
    assert [a.annotator for a in store.humans.human_answers(first.id)] == ["alice"]
    assert store.humans.requests_for("ALICE") == []
