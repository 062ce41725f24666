"""A scripted shift over the web app's HTTP API: two annotators, a reviewer, 40 items (issue 46).

Some items are assigned to one annotator each, the rest are everyone's; the
run's guidelines show beside each item; every item ends answered once and
reviewed once (some corrected, with a note, the original kept), and the
Results tab's team figures show each person's numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from gradio_client import Client  # noqa: E402
from test_web_api import ANSWER, SIGN_IN, named  # noqa: E402
from web_support import serve_app  # noqa: E402

from aah.store import SessionStore  # noqa: E402
from aah.ui.web.auth import WebAuth  # noqa: E402

ITEMS = 40
TOKEN = "team-token"
GUIDELINES = "# Be brief\nAnswer **only** what is asked. <script>alert(1)</script>"
REVIEW = ["status", "item", "correction", "note", "request_id"]


def _seed(db: Path) -> list[str]:
    with SessionStore(db) as store:
        store.create_run("shift", {})
        store.team.set_run_team("shift", reviewers=1, guidelines=GUIDELINES)
        store.team.set_person("rita", "reviewer")
        ids = []
        for n in range(ITEMS):
            session = store.open_session(f"Task {n}", setting="underspecified", run="shift")
            store.set_status(session.id, "waiting")
            context = {"query": f"Task {n}", "setting": "underspecified", "run": "shift"}
            ids.append(store.humans.create_human_request(session.id, f"Q{n}?", context).id)
        for request_id in ids[:10]:
            store.team.assign(["alice"], request_id=request_id)
        return ids


def test_a_shift_of_forty_items_ends_answered_once_reviewed_and_counted(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    ids = _seed(db)
    # With tokens set, only the admin token's holder is an admin (who may review too).
    with serve_app(db, auth=WebAuth(TOKEN, "admin-token")) as url:
        # The admin offers ten items to bob from the page (by their ids' first characters).
        admin = Client(url, verbose=False)
        admin.predict("ada", "admin-token", api_name="/sign_in")
        prefixes = ", ".join(request_id[:8] for request_id in ids[10:20])
        said = admin.predict("item", prefixes, "Bob", api_name="/assign_items")
        assert said == f"Items **{prefixes}**: offered only to bob."
        people = {name: Client(url, verbose=False) for name in ("alice", "bob")}
        shown = {
            name: named(SIGN_IN, api.predict(name, TOKEN, api_name="/sign_in"))
            for name, api in people.items()
        }
        # The guidelines beside the item, as safe HTML: formatted, the script inert.
        assert "<h1>Be brief</h1>" in shown["alice"]["request"]
        assert "<script>" not in shown["alice"]["request"]
        assert "&lt;script&gt;" in shown["alice"]["request"]
        answered: dict[str, list[str]] = {"alice": [], "bob": []}
        open_now = {name: shown[name]["request_id"] for name in people}
        while any(open_now.values()):
            for name, api in people.items():
                request_id = open_now[name]
                if not request_id:
                    continue
                after = named(ANSWER, api.predict(f"answer {name}", None, api_name="/send_answer"))
                assert after["done"] == request_id, after["status"]
                answered[name].append(request_id)
                open_now[name] = after["request_id"]
        # Each got their own assigned items, never the other's.
        assert set(ids[:10]) <= set(answered["alice"]) and not set(ids[10:20]) & set(
            answered["alice"]
        )
        assert set(ids[10:20]) <= set(answered["bob"]) and not set(ids[:10]) & set(answered["bob"])
        assert sorted(answered["alice"] + answered["bob"]) == sorted(ids)

        # The reviewer's pass: accept, or every fifth corrected with a note.
        rita = Client(url, verbose=False)
        rita.predict("rita", TOKEN, api_name="/sign_in")
        item = named(REVIEW, rita.predict([], api_name="/review_next"))
        corrected = []
        for n in range(ITEMS):
            request_id = item["request_id"]
            assert request_id and "Guidelines for this run" in item["item"]
            if n % 5 == 0:
                corrected.append(request_id)
                values = rita.predict(
                    request_id, "fixed", "too long", [], api_name="/review_correct"
                )
            else:
                values = rita.predict(request_id, "", "", [], api_name="/review_accept")
            item = named(REVIEW, values)
        assert item["request_id"] == "" and "Nothing waits for your review" in item["status"]
        # An annotator is no reviewer, nor an admin: one line each, nothing stored.
        with pytest.raises(Exception, match="only reviewers review"):
            people["bob"].predict([], api_name="/review_next")
        with pytest.raises(Exception, match="only an admin"):
            people["bob"].predict("run", "shift", "bob", api_name="/assign_items")

        team = rita.predict([], api_name="/show_team")  # no run picked: every run

    with SessionStore(db) as store:
        for request_id in ids:
            (only,) = store.humans.human_answers(request_id)  # decided once
            (review,) = store.team.reviews(request_id)  # reviewed once
            assert review.reviewer == "rita"
            assert only.answer.startswith("answer ")  # the original stays
            if request_id in corrected:
                assert (review.verdict, review.correction, review.note) == (
                    "correct",
                    "fixed",
                    "too long",
                )
    rows = {m[0]: m[1] for m in re.findall(r"<td[^>]*><b>(\w+)</b></td>(.*?)</tr>", team)}
    assert set(rows) == {"alice", "bob", "rita"}
    alice_done, bob_done = len(answered["alice"]), len(answered["bob"])
    assert f'<td data-label="done">{alice_done}/30</td>' in rows["alice"]
    assert f'<td data-label="done">{bob_done}/30</td>' in rows["bob"]
    accepted_alice = sum(1 for r in answered["alice"] if r not in corrected)
    assert f"{accepted_alice}/{alice_done} (" in rows["alice"]
    assert '<td data-label="reviews">40 (' in rows["rita"]
    assert "<b>40</b> of <b>40</b> answered items reviewed" in team
